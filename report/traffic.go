package report

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// The reference study's traffic figures (its section on scalability): an
// NTP client polling every 8 s costs its server 23 B/s; a PTP master sends a
// fixed 180 B/s (Sync and Follow_Up) plus 186 B/s per slave (Delay_Req and
// Delay_Resp).
const (
	StudyNTPBytesPerS      = 23.0
	StudyPTPFixedBytesPerS = 180.0
	StudyPTPBytesPerS      = 186.0
)

// TrafficShare is the share of a link's capacity the clients may use (10 %,
// the study's assumption), and TrafficLinks the link rates in bit/s.
const TrafficShare = 0.1

var TrafficLinks = []float64{100e6, 1e9}

// trafficScale keeps rates to the milli-byte per second.
const trafficScale = 1000

// TrafficRow is one line of the traffic report and one object of its JSON.
type TrafficRow struct {
	Protocol string            `json:"protocol"` // ntp or ptp
	Source   string            `json:"source"`   // measured or study
	Series   map[string]string `json:"series"`   // host, server or master
	Records  int               `json:"records,omitempty"`
	// SentBPS and ReceivedBPS are the probe's own directions (PTP only:
	// the NTP probe ships their sum).
	SentBPS     *float64 `json:"sent_bytes_per_s,omitempty"`
	ReceivedBPS *float64 `json:"received_bytes_per_s,omitempty"`
	// FixedBPS is the study's PTP master's load independent of the slaves.
	FixedBPS     float64 `json:"fixed_bytes_per_s,omitempty"`
	PerClientBPS float64 `json:"bytes_per_s_per_client"`
	// Clients one server or master port serves with TrafficShare of a
	// 100 Mb/s and of a 1 Gb/s link: floor(0.1 × rate / 8 / PerClientBPS).
	Clients100M int64 `json:"clients_100mbps"`
	Clients1G   int64 `json:"clients_1gbps"`

	name string
}

// Clients is how many clients of perClient B/s fit in TrafficShare of a link
// of rate bit/s (0 for a non-positive perClient).
func Clients(rate, perClient float64) int64 {
	if perClient <= 0 || math.IsNaN(perClient) {
		return 0
	}
	return int64(math.Floor(TrafficShare * rate / 8 / perClient))
}

func newTrafficRow(proto, source, name string, tags []Tag, perClient float64) TrafficRow {
	r := TrafficRow{Protocol: proto, Source: source, Series: map[string]string{}, PerClientBPS: perClient,
		Clients100M: Clients(TrafficLinks[0], perClient), Clients1G: Clients(TrafficLinks[1], perClient), name: name}
	for _, t := range tags {
		r.Series[t.Key] = t.Value
	}
	return r
}

// StudyTraffic returns the study's two rows.
func StudyTraffic() []TrafficRow {
	ntp := newTrafficRow("ntp", "study", "study: 8 s poll", nil, StudyNTPBytesPerS)
	ptp := newTrafficRow("ptp", "study", "study: 1 s messages", nil, StudyPTPBytesPerS)
	ptp.FixedBPS = StudyPTPFixedBytesPerS
	return []TrafficRow{ntp, ptp}
}

// TrafficFrom computes the measured rows from the collected series: ntp,
// the ntp_probe records' bytes_per_s grouped by host and server; sent and
// received, the ptp_probe_stats records' bytes_sent_per_s and
// bytes_received_per_s grouped by host and master; all scaled by
// trafficScale. Each series' latest record counts: the probes ship rates
// averaged since they started, so the latest is the longest average.
func TrafficFrom(ntp, sent, recv []*Series) []TrafficRow {
	var rows []TrafficRow
	last := func(s *Series) float64 { return float64(s.X[len(s.X)-1]) / trafficScale }
	for _, s := range ntp {
		r := newTrafficRow("ntp", "measured", s.Name(), s.Tags, last(s))
		r.Records = len(s.X)
		rows = append(rows, r)
	}
	byName := map[string]*Series{}
	for _, s := range recv {
		byName[s.Name()] = s
	}
	for _, s := range sent {
		rv := byName[s.Name()]
		if rv == nil {
			continue
		}
		sb, rb := last(s), last(rv)
		r := newTrafficRow("ptp", "measured", s.Name(), s.Tags, sb+rb)
		r.SentBPS, r.ReceivedBPS, r.Records = &sb, &rb, len(s.X)
		rows = append(rows, r)
	}
	return rows
}

// RunTraffic reads the NTP and PTP probes' byte rates (q.Where, Start and
// Stop apply; Measurement, Field and GroupBy are set here) and writes, per
// probe and server or master, the bytes per second per client and how many
// such clients one server or master port serves with 10 % of 100 Mb/s and
// of 1 Gb/s, next to the study's figures.
func RunTraffic(ctx context.Context, in Input, q Query, format string, out, errw io.Writer) error {
	if err := in.rereadable(); err != nil {
		return err
	}
	get := func(m, f string, group ...string) ([]*Series, error) {
		qq := q
		qq.Measurement, qq.Field, qq.GroupBy, qq.Scale, qq.TimeValue = m, f, group, trafficScale, false
		return readOptional(ctx, in, qq, io.Discard)
	}
	ntp, err := get("ntp_probe", "bytes_per_s", "host", "server")
	if err != nil {
		return err
	}
	sent, err := get("ptp_probe_stats", "bytes_sent_per_s", "host", "master")
	if err != nil {
		return err
	}
	recv, err := get("ptp_probe_stats", "bytes_received_per_s", "host", "master")
	if err != nil {
		return err
	}
	rows := TrafficFrom(ntp, sent, recv)
	if len(rows) == 0 {
		where := ""
		if len(q.Where) > 0 {
			where = fmt.Sprintf(" where %v", q.Where)
		}
		return fmt.Errorf("traffic: %w: no ntp_probe records with bytes_per_s nor ptp_probe_stats records with bytes_sent_per_s and bytes_received_per_s%s", ErrNoData, where)
	}
	rows = append(rows, StudyTraffic()...)
	switch format {
	case "json":
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	case "markdown":
		return WriteTrafficMarkdown(out, rows)
	}
	return WriteTrafficText(out, rows)
}

var trafficHeader = []string{"protocol", "series", "records", "sent B/s", "received B/s", "B/s per client", "clients @10% of 100 Mb/s", "clients @10% of 1 Gb/s"}

func trafficCells(r TrafficRow) []string {
	f := func(p *float64) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprintf("%.1f", *p)
	}
	recs := "-"
	if r.Source == "measured" {
		recs = fmt.Sprint(r.Records)
	}
	per := fmt.Sprintf("%.1f", r.PerClientBPS)
	if r.FixedBPS != 0 {
		per = fmt.Sprintf("%.0f + %.0f fixed", r.PerClientBPS, r.FixedBPS)
	}
	name := r.name
	if name == "" {
		name = "(all)"
	}
	return []string{r.Protocol, name, recs, f(r.SentBPS), f(r.ReceivedBPS), per, fmt.Sprint(r.Clients100M), fmt.Sprint(r.Clients1G)}
}

const trafficNote = "NTP: both directions (bytes_per_s of ntp_probe). PTP: the probe's Delay_Reqs sent plus everything it received " +
	"(Sync, Follow_Up, Announce and, on a multicast E2E network, other slaves' Delay_Req and Delay_Resp): an upper bound of one slave's share, " +
	"so its clients are a lower bound. Clients = floor(0.1 × link rate / 8 / B/s per client); the study leaves PTP's fixed 180 B/s out."

// WriteTrafficText writes the traffic rows as an aligned table and a note.
func WriteTrafficText(w io.Writer, rows []TrafficRow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(trafficHeader, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(trafficCells(r), "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%s\n", trafficNote)
	return err
}

// WriteTrafficMarkdown writes the traffic rows as a markdown table and a note.
func WriteTrafficMarkdown(w io.Writer, rows []TrafficRow) error {
	fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(trafficHeader, " | "), strings.Repeat("---|", len(trafficHeader)))
	for _, r := range rows {
		cells := trafficCells(r)
		for i, c := range cells {
			cells[i] = strings.ReplaceAll(c, "|", `\|`)
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
	_, err := fmt.Fprintf(w, "\n%s\n", trafficNote)
	return err
}
