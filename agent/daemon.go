package agent

import (
	"io"
	"time"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/conf"
	"github.com/monagent/monagent/judge"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/timebase"
)

// buildInstances builds the sources of each enabled instance (build is
// given its key); a failure closes those built and is returned as it is.
func buildInstances[T conf.Entry](in *conf.Instances[T], build func(key string, c T) ([]collect.Source, error)) ([]collect.Source, error) {
	keys, all := in.All()
	var out []collect.Source
	for i, c := range all {
		if !c.Head().Enabled {
			continue
		}
		ss, err := build(keys[i], c)
		out = append(out, ss...)
		if err != nil {
			closeSources(out)
			return nil, err
		}
	}
	return out, nil
}

// instanceTags are the tags an instance's records carry first: instance=
// its name, none for an unnamed one (one daemon, as before instances).
func instanceTags(name string) []record.Tag {
	if name == "" {
		return nil
	}
	return []record.Tag{{Key: "instance", Value: name}}
}

// withTags is tags followed by more, in a slice of its own.
func withTags(tags []record.Tag, more ...record.Tag) []record.Tag {
	return append(append(make([]record.Tag, 0, len(tags)+len(more)), tags...), more...)
}

// instanceSource is a source's name for an instance: base, or base:name.
func instanceSource(base, name string) string {
	if name == "" {
		return base
	}
	return base + ":" + name
}

// daemon is what the monitor of a daemon instance (chronyd, ntpd, ptp4l)
// shares: its source's name (kind, or kind:<instance>), the instance's tags,
// its poll interval, its judged clock and the client Close closes.
type daemon struct {
	name     string
	tags     []record.Tag
	interval time.Duration
	judged   *judgement
	client   io.Closer
}

// newDaemon is the monitor of an instance named instance at key, polled
// every interval through client, with its clock judged as j says (clock,
// as source, in the vote of voting; quiet: how long no sample means the
// reference is lost). A failure closes client.
func newDaemon(env *Env, key, kind, instance string, interval time.Duration, client io.Closer,
	clock, voting, source string, j JudgeConfig, quiet time.Duration) (daemon, error) {
	d := daemon{name: instanceSource(kind, instance), tags: instanceTags(instance), interval: interval, client: client}
	if source == "" {
		source = d.name
	}
	var err error
	if d.judged, err = env.judges.AddVoting(clock, voting, source, j, quiet); err != nil {
		client.Close()
		return d, keyErr(key+".judge", "%v", err)
	}
	return d, nil
}

// ntpDaemon sets d to the monitor of a chronyd or ntpd instance (kind):
// the system clock judged as the daemon disciplines it, its reference lost
// after two intervals and a timeout without an answer.
func (d *daemon) ntpDaemon(env *Env, key, kind string, c conf.Instance, interval time.Duration, j JudgeConfig, client io.Closer) (err error) {
	*d, err = newDaemon(env, key, kind, c.Name, interval, client, "system", "system", "", j, 2*interval+env.Config.NTP.Timeout)
	return err
}

func (d *daemon) Name() string            { return d.name }
func (d *daemon) Interval() time.Duration { return d.interval }
func (d *daemon) Close() error            { return d.client.Close() }

// judgeDaemon judges the system clock as a daemon disciplines it, by its
// answer at t: synchronised or not, its offset (the clock against the
// daemon's reference, local − reference, as every judged source gives it:
// the vote compares them), and the bound both chronyc's
// and ntpq's documentation give, |offset| + root dispersion + ½ root delay,
// which grows at the daemon's wander (chronyd's skew, ntpd's clk_wander),
// at least at the judge's floor (minDriftPPB). unsynced is why it is not
// synchronised (empty: judge.ReasonUnsynced).
func (d *daemon) judgeDaemon(b adder, t int64, synced bool, unsynced judge.Reason, offset, rootDelay, rootDisp, wanderPPB int64) {
	d.judged.Observe(b, judge.Sample{TimeNS: t, Synced: synced, Unsynced: unsynced, OffsetNS: offset,
		BoundNS: judge.Daemon(offset, rootDelay, rootDisp), FreqErrPPB: wanderPPB})
}

// unanswered says the daemon's state did not come (err not nil): a sample
// missed now.
func (d *daemon) unanswered(b adder, err error) {
	if err != nil {
		now := timebase.RealtimeNS()
		d.judged.Missed(b, now)
	}
}
