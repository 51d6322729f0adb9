package ptp

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/internal/testbed"
)

// pmcField reads "name value" lines of pmc's output.
func pmcField(t *testing.T, out, name string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && f[0] == name {
			return f[1]
		}
	}
	t.Fatalf("pmc output has no %s:\n%s", name, out)
	return ""
}

func TestMonitorAgainstPtp4l(t *testing.T) {
	m, s := testbed.NewLink(t)
	testbed.StartPtp4l(t, m, testbed.Ptp4lOptions{Master: true})
	slave := testbed.StartPtp4l(t, s, testbed.Ptp4lOptions{})
	mon := NewMonitor(slave.Socket, 0, time.Second)
	defer mon.Close()
	// Wait for the slave to measure the master.
	deadline := time.Now().Add(30 * time.Second)
	for {
		cds, err := mon.CurrentDataSet(t.Context())
		if err == nil && cds.StepsRemoved == 1 && cds.MeanPathDelay != 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("slave never measured the master: %+v %v\n%s", cds, err, slave.LogText())
		}
		time.Sleep(200 * time.Millisecond)
	}
	// CURRENT_DATA_SET as pmc prints it, for the same instant: the values change
	// once a second, so retry until a monitor read before and after pmc agree.
	var ok bool
	for i := 0; i < 20 && !ok; i++ {
		before, err := mon.CurrentDataSet(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		out := slave.Pmc(t, "GET CURRENT_DATA_SET")
		after, _ := mon.CurrentDataSet(t.Context())
		if *before != *after {
			continue
		}
		off, _ := strconv.ParseFloat(pmcField(t, out, "offsetFromMaster"), 64)
		delay, _ := strconv.ParseFloat(pmcField(t, out, "meanPathDelay"), 64)
		steps := pmcField(t, out, "stepsRemoved")
		if steps != fmt.Sprint(before.StepsRemoved) || off != before.OffsetFromMaster.Nanoseconds() || delay != before.MeanPathDelay.Nanoseconds() {
			t.Fatalf("pmc says steps %s offset %v delay %v; monitor %+v", steps, off, delay, before)
		}
		t.Logf("CURRENT_DATA_SET: pmc offsetFromMaster %v meanPathDelay %v stepsRemoved %s = monitor %v %v %d",
			off, delay, steps, before.OffsetFromMaster.Nanoseconds(), before.MeanPathDelay.Nanoseconds(), before.StepsRemoved)
		ok = true
	}
	if !ok {
		t.Fatal("never caught a stable CURRENT_DATA_SET")
	}
	parent, err := mon.ParentDataSet(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	pmcParent := slave.Pmc(t, "GET PARENT_DATA_SET")
	if got := pmcField(t, pmcParent, "grandmasterIdentity"); got != parent.GrandmasterIdentity.String() {
		t.Errorf("grandmaster: pmc %s, monitor %s", got, parent.GrandmasterIdentity)
	}
	if _, err := mon.DefaultDataSet(t.Context()); err != nil {
		t.Fatal(err)
	}
	ts, err := mon.TimeStatusNP(t.Context())
	if err != nil || ts.GMPresent == 0 {
		t.Fatalf("TIME_STATUS_NP %+v %v", ts, err)
	}
	if ps, err := mon.PortStatsNP(t.Context()); err != nil || ps.PortStats.RXMsgType[0] == 0 {
		t.Fatalf("PORT_STATS_NP %+v %v", ps, err)
	}
	pds, err := mon.PortDataSet(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	pmcPort := slave.Pmc(t, "GET PORT_DATA_SET")
	if got := pmcField(t, pmcPort, "portState"); got != pds.PortState.String() {
		t.Errorf("port state: pmc %s, monitor %s", got, pds.PortState)
	}
	if got := pmcField(t, pmcPort, "logSyncInterval"); got != fmt.Sprint(pds.LogSyncInterval) {
		t.Errorf("logSyncInterval: pmc %s, monitor %d", got, pds.LogSyncInterval)
	}
	t.Logf("PORT_DATA_SET %+v", pds)
	// linuxptp 3.1 has no PORT_SERVICE_STATS_NP: degrade, do not fail.
	_, serr := mon.PortServiceStatsNP(t.Context())
	if serr != nil && !errors.Is(serr, ErrUnsupported) {
		t.Fatalf("PORT_SERVICE_STATS_NP: %v", serr)
	} else if serr != nil {
		t.Logf("PORT_SERVICE_STATS_NP: %v", serr)
	}
	// Status: every dataset at once; one ptp4l does not have is asked for
	// once, and no error.
	for i := range 2 {
		errs := mon.Errors.Load()
		st, err := mon.Status(t.Context())
		if err != nil || st.Current == nil || st.Current.StepsRemoved != 1 || st.Parent == nil || st.TimeStatus == nil || st.Port == nil ||
			st.PortStats == nil || st.PortStats.Messages[0].Type != "sync" || st.PortStats.Messages[0].RX == 0 {
			t.Fatalf("status %d: %+v %v", i, st, err)
		}
		if unsupported := errors.Is(serr, ErrUnsupported); (st.PortServiceStats == nil) != unsupported ||
			mon.ServiceStatsUnsupported.Load() != unsupported || unsupported && i == 1 && mon.Errors.Load() != errs {
			t.Fatalf("status %d: service stats %+v, unsupported %v, errors %d then %d; PORT_SERVICE_STATS_NP said %v",
				i, st.PortServiceStats, mon.ServiceStatsUnsupported.Load(), errs, mon.Errors.Load(), serr)
		}
	}
}
