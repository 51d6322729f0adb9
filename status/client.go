package status

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"
)

// ErrNotMonagent is Fetch's error for an answer that is not monagent's
// /status document (another web server on the port, a proxy's page).
var ErrNotMonagent = errors.New("not a monagent /status document")

// StatusURL is the /status URL of the agent at base: http://host:port, with
// or without a trailing slash or /status (the endpoint as copied from a
// browser is taken as is). A base that is no http(s)://host[:port][/status]
// URL is an error naming it.
func StatusURL(base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("%q is not a URL: %w", base, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("%q: want an http:// or https:// URL, e.g. http://boarda:9469", base)
	}
	if u.Host == "" || u.Hostname() == "" {
		return "", fmt.Errorf("%q: no host (want http://host:port)", base)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%q: want http://host:port, without user, query or fragment", base)
	}
	switch p := strings.TrimSuffix(u.Path, "/"); {
	case p == "" || p == "/status":
		u.Path = "/status"
	default:
		return "", fmt.Errorf("%q: path %q: want none or /status", base, u.Path)
	}
	return u.String(), nil
}

// Fetch reads the /status document of the agent at base (see StatusURL). An
// answer that is not monagent's document is ErrNotMonagent (wrapped), told
// from an agent with no judged clock.
func Fetch(ctx context.Context, base string) (Doc, error) {
	u, err := StatusURL(base)
	if err != nil {
		return Doc{}, fmt.Errorf("status: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return Doc{}, fmt.Errorf("status %s: %w", u, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Doc{}, fmt.Errorf("status %s: %w", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return Doc{}, fmt.Errorf("status %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return Doc{}, fmt.Errorf("status %s: HTTP %d: %.200s", u, resp.StatusCode, body)
	}
	return decodeDoc(u, body)
}

// decodeDoc decodes a /status document, which must carry its three keys.
func decodeDoc(u string, body []byte) (Doc, error) {
	var keys struct {
		Host   json.RawMessage `json:"host"`
		TimeNS json.RawMessage `json:"time_ns"`
		Clocks json.RawMessage `json:"clocks"`
	}
	if err := json.Unmarshal(body, &keys); err != nil {
		return Doc{}, fmt.Errorf("status %s: %w: %v", u, ErrNotMonagent, err)
	}
	if len(keys.Host) == 0 || len(keys.TimeNS) == 0 || len(keys.Clocks) == 0 {
		return Doc{}, fmt.Errorf("status %s: %w (no host, time_ns and clocks): %.120s", u, ErrNotMonagent, body)
	}
	var d Doc
	if err := json.Unmarshal(body, &d); err != nil {
		return Doc{}, fmt.Errorf("status %s: %w: %v", u, ErrNotMonagent, err)
	}
	return d, nil
}

// Render writes d as a person reads it: one line per judged clock with its
// state, since when, offset and bound in human units, the age of its last
// sample, the events its source lost and its verdict in its clock's vote
// (FALSETICKER in capitals); then one line per clock with the vote's
// combined answer.
func Render(w io.Writer, d Doc) error {
	at := time.Unix(0, d.TimeNS).UTC()
	fmt.Fprintf(w, "%s at %s\n", d.Host, at.Format(time.RFC3339))
	if d.Reference != "" {
		fmt.Fprintln(w, d.Reference)
	}
	if len(d.Clocks) == 0 {
		if d.Reference != "" {
			return nil
		}
		_, err := fmt.Fprintln(w, "no judged clocks (enable a judge: section under a source)")
		return err
	}
	votes := make(map[string]string, len(d.Combined))
	for _, c := range d.Combined {
		votes[c.Clock] = c.Vote
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CLOCK\tSOURCE\tSTATE\tSINCE\tOFFSET\tBOUND\tLAST SAMPLE\tLOST\tCROSS-CHECK")
	for _, c := range d.Clocks {
		since, last, bound, off := "-", "never", "unknown", "-"
		if c.SinceNS != 0 {
			since = Duration(d.TimeNS-c.SinceNS) + " ago"
		}
		if c.LastSampleNS != 0 {
			last = Duration(d.TimeNS-c.LastSampleNS) + " ago"
			off = Signed(c.OffsetNS)
		}
		if c.ErrorBoundNS >= 0 {
			bound = Duration(c.ErrorBoundNS)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", c.Clock, c.Source, c.State, since, off, bound, last, c.EventsLost,
			verdict(c, votes[c.Clock]))
	}
	if err := tw.Flush(); err != nil || len(d.Combined) == 0 {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CLOCK\tCOMBINED\tVOTE\tOFFSET\tBOUND\tTHRESHOLD\tAGREEING\tFALSETICKERS")
	for _, c := range d.Combined {
		off, bound, named := "-", "none", "-"
		if c.ErrorBoundNS >= 0 {
			off, bound = Signed(c.OffsetNS), Duration(c.ErrorBoundNS)
		}
		if len(c.Falsetickers) > 0 {
			named = strings.Join(c.Falsetickers, ", ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d of %d\t%s\n", c.Clock, c.State, c.Vote, off, bound, Duration(c.ThresholdNS),
			c.Agreeing, c.Voting, named)
	}
	return tw.Flush()
}

// verdict is how a reference's part in its clock's vote (clockVote) is
// shown: agrees, FALSETICKER, DISPUTED, not cross-checked, or "-" when it
// does not vote.
func verdict(c Clock, clockVote string) string {
	switch {
	case c.Agrees == nil && clockVote == "not cross-checked" && (c.State == "LOCKED" || c.State == "HOLDOVER"):
		return "not cross-checked"
	case c.Agrees == nil:
		return "-"
	case *c.Agrees:
		return "agrees"
	case clockVote == "disputed":
		return "DISPUTED"
	}
	return "FALSETICKER"
}

// Duration is ns in the largest unit that keeps it ≥ 1 (ns, µs, ms, s, min,
// h), three significant digits.
func Duration(ns int64) string {
	neg := ns < 0
	if neg {
		ns = -ns
	}
	v, unit := float64(ns), "ns"
	for _, u := range []struct {
		div  float64
		name string
	}{{1e3, "µs"}, {1e6, "ms"}, {1e9, "s"}, {60e9, "min"}, {3600e9, "h"}} {
		if float64(ns) >= u.div {
			v, unit = float64(ns)/u.div, u.name
		}
	}
	s := fmt.Sprintf("%.3g %s", v, unit)
	if neg {
		s = "-" + s
	}
	return s
}

// Signed is Duration with its sign always shown.
func Signed(ns int64) string {
	if ns >= 0 {
		return "+" + Duration(ns)
	}
	return Duration(ns)
}
