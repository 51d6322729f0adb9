package report

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/influxdata/line-protocol/v2/lineprotocol"
	"github.com/monagent/monagent/sink/spool"
)

// ReadLineProtocol adds the selected records of line protocol from r.
// A malformed line fails with its line number.
func (c *Collector) ReadLineProtocol(r io.Reader) error {
	return c.decode(lineprotocol.NewDecoder(r))
}

func (c *Collector) decode(d *lineprotocol.Decoder) error {
	var tags []Tag
	for d.Next() {
		c.tick()
		if err := c.decodeLine(d, &tags); err != nil {
			var de *lineprotocol.DecodeError
			if !errors.As(err, &de) {
				return err // a mixed series
			}
			c.Counts.Malformed++
			if c.firstMalformed == "" {
				c.firstMalformed = fmt.Sprintf("%s: %v", c.Source, err)
			}
		}
	}
	return d.Err()
}

// decodeLine adds the decoder's current line if it is selected. Syntax
// errors (*lineprotocol.DecodeError) leave the line unused.
func (c *Collector) decodeLine(d *lineprotocol.Decoder, tags *[]Tag) error {
	m, err := d.Measurement()
	if err != nil || !c.wantMeasurement(m) {
		return err
	}
	*tags = (*tags)[:0]
	for {
		k, v, err := d.NextTag()
		if err != nil {
			return err
		}
		if k == nil {
			break
		}
		*tags = append(*tags, Tag{string(k), string(v)})
	}
	val, has, err := c.queryField(d)
	if err != nil {
		return err
	}
	tb, err := d.TimeBytes()
	if err != nil {
		return err
	}
	var t int64
	if len(tb) > 0 {
		if t, err = strconv.ParseInt(string(tb), 10, 64); err != nil {
			return &lineprotocol.DecodeError{Err: fmt.Errorf("timestamp %q: %w", tb, err)}
		}
	}
	return c.Add(*tags, has, val, t, len(tb) > 0)
}

// queryField reads the line's fields and returns the value of the query's
// field (its first, should the line repeat it) and whether the line has it.
func (c *Collector) queryField(d *lineprotocol.Decoder) (val Value, has bool, err error) {
	for {
		k, v, err := d.NextField()
		if err != nil {
			return Value{}, false, err
		}
		if k == nil {
			return val, has, nil
		}
		if !has && string(k) == c.q.Field {
			val, has = fieldValue(v), true
		}
	}
}

// fieldValue is a line-protocol field value as a Value: an unsigned integer
// beyond int64 as a float.
func fieldValue(v lineprotocol.Value) Value {
	switch v.Kind() {
	case lineprotocol.Int:
		return Value{Kind: KindInt, Int: v.IntV()}
	case lineprotocol.Uint:
		u := v.UintV()
		if u > 1<<63-1 {
			return Value{Kind: KindFloat, Float: float64(u)}
		}
		return Value{Kind: KindInt, Int: int64(u)}
	case lineprotocol.Float:
		return Value{Kind: KindFloat, Float: v.FloatV()}
	}
	return Value{Kind: KindOther}
}

// ReadFile adds the selected records of a line-protocol file.
func (c *Collector) ReadFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := c.ReadLineProtocol(f); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// ReadSpool adds the selected records of every segment in a spool directory,
// oldest first, through the spool package's reader (ReadSpoolDir), and notes
// on Progress what it skipped.
func (c *Collector) ReadSpool(dir string) error {
	st, err := c.ReadSpoolDir(dir)
	if err != nil {
		return err
	}
	if c.Progress != nil && (st.Vanished > 0 || st.TailBytes > 0) {
		fmt.Fprintf(c.Progress, "report: spool %s: skipped %d segments acknowledged and deleted while being read, %d bytes of tails being written or torn\n",
			dir, st.Vanished, st.TailBytes)
	}
	return nil
}

// ReadSpoolDir is ReadSpool returning what spool.ReadDir found. It takes no
// lock and writes nothing, so a running agent neither blocks a report nor is
// disturbed by one: points already shipped are gone once their segment is,
// a segment deleted meanwhile is skipped and counted (Vanished), and a tail
// being written ends its segment's reading (TailBytes).
func (c *Collector) ReadSpoolDir(dir string) (spool.DirStats, error) {
	st, err := spool.ReadDir(dir, func(e spool.Entry) error {
		return c.decode(lineprotocol.NewDecoderWithBytes(e.Lines))
	})
	if err != nil {
		return st, err
	}
	if st.Segments == 0 {
		return st, fmt.Errorf("spool %s: %w: no segment files", dir, ErrNoData)
	}
	return st, nil
}

// Influx names an InfluxDB 1.8 database to query over its /query endpoint.
type Influx struct {
	URL    string // http(s)://host:port
	Bucket string // "db/rp" or "db"
	Token  string // "user:pass", or empty
	Client *http.Client
}

// InfluxQL returns the statement ReadInflux sends for q.
func InfluxQL(q Query) string { return influxQL(q, "") }

// influxQL is InfluxQL with the extra condition also (groups of
// runByGroup).
func influxQL(q Query, extra string) string {
	var b strings.Builder
	if q.Field == "" { // TimeValue: any record of the measurement
		fmt.Fprintf(&b, "SELECT * FROM %s", quoteIdent(q.Measurement))
	} else {
		fmt.Fprintf(&b, "SELECT %s FROM %s", quoteIdent(q.Field), quoteIdent(q.Measurement))
	}
	b.WriteString(influxWhere(q, extra))
	b.WriteString(" GROUP BY *") // the whole tag set: grouped here, as for files
	return b.String()
}

// influxWhere is the WHERE clause of q's time bounds, its tags and the
// extra condition.
func influxWhere(q Query, extra string) string {
	var conds []string
	if q.Start != 0 {
		conds = append(conds, fmt.Sprintf("time >= %d", q.Start))
	}
	if q.Stop != 0 {
		conds = append(conds, fmt.Sprintf("time <= %d", q.Stop))
	}
	for _, w := range q.Where {
		conds = append(conds, tagCond(w))
	}
	if extra != "" {
		conds = append(conds, extra)
	}
	if len(conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(conds, " AND ")
}

// tagCond is the InfluxQL condition that tag t.Key is t.Value (empty: the
// point lacks the tag).
func tagCond(t Tag) string {
	return fmt.Sprintf("%s = '%s'", quoteIdent(t.Key), strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(t.Value))
}

func quoteIdent(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// influxResponse is the JSON of InfluxDB 1.x /query.
type influxResponse struct {
	Results []struct {
		Series []struct {
			Name    string            `json:"name"`
			Tags    map[string]string `json:"tags"`
			Columns []string          `json:"columns"`
			Values  [][]any           `json:"values"`
		} `json:"series"`
		Error string `json:"error"`
	} `json:"results"`
	Error string `json:"error"`
}

// ReadInflux queries InfluxDB for the selected records (times as epoch ns).
// Any HTTP or query error fails with one message naming the server.
func (c *Collector) ReadInflux(ctx context.Context, in Influx) error {
	return c.readInflux(ctx, in, "")
}

// readInflux is ReadInflux of the records that also meet the extra
// InfluxQL condition ("" for none).
func (c *Collector) readInflux(ctx context.Context, in Influx, extra string) error {
	return influxQuery(ctx, in, influxQL(c.q, extra), func(r *influxResponse) error { return c.addInflux(in.URL, r) })
}

// influxQuery sends stmt to InfluxDB's /query and hands each chunk of the
// answer to fn: chunked, the server streams JSON objects of at most
// chunk_size rows, decoded one at a time, so a large answer is never held
// whole.
func influxQuery(ctx context.Context, in Influx, stmt string, fn func(*influxResponse) error) error {
	u, err := url.Parse(in.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("influxdb url %q: want http(s)://host:port", in.URL)
	}
	db, rp, _ := strings.Cut(in.Bucket, "/")
	if db == "" {
		return errors.New("influxdb: --bucket db/rp is required")
	}
	v := url.Values{"db": {db}, "q": {stmt}, "epoch": {"ns"}, "chunked": {"true"}, "chunk_size": {"10000"}}
	if rp != "" {
		v.Set("rp", rp)
	}
	u = u.JoinPath("query")
	u.RawQuery = v.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	if in.Token != "" {
		user, pass, _ := strings.Cut(in.Token, ":")
		req.SetBasicAuth(user, pass)
	}
	hc := in.Client
	if hc == nil {
		hc = &http.Client{Timeout: 5 * time.Minute}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("influxdb %s: %w", in.URL, err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	dec.UseNumber()
	if resp.StatusCode != http.StatusOK {
		var r influxResponse
		msg := http.StatusText(resp.StatusCode)
		if dec.Decode(&r) == nil && r.Error != "" {
			msg = r.Error
		}
		hint := ""
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			hint = " (check --token user:pass)"
		}
		return fmt.Errorf("influxdb %s: HTTP %d: %s%s", in.URL, resp.StatusCode, msg, hint)
	}
	for {
		var r influxResponse
		if err := dec.Decode(&r); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("influxdb %s: decoding the response: %w", in.URL, err)
		}
		if err := fn(&r); err != nil {
			return err
		}
	}
}

// addInflux adds the rows of one (chunk of a) /query response.
func (c *Collector) addInflux(server string, r *influxResponse) error {
	if r.Error != "" {
		return fmt.Errorf("influxdb %s: %s", server, r.Error)
	}
	var tags []Tag
	for _, res := range r.Results {
		if res.Error != "" {
			return fmt.Errorf("influxdb %s: %s", server, res.Error)
		}
		for _, s := range res.Series {
			ti, fi := indexOf(s.Columns, "time"), indexOf(s.Columns, c.q.Field)
			if c.q.Field == "" {
				fi = ti
			}
			if ti < 0 || fi < 0 {
				return fmt.Errorf("influxdb %s: series %s lacks column time or %s: %v", server, s.Name, c.q.Field, s.Columns)
			}
			for _, row := range s.Values {
				c.tick()
				tags = tags[:0]
				for k, v := range s.Tags {
					if v != "" { // GROUP BY * gives "" for tags a point lacks
						tags = append(tags, Tag{k, v})
					}
				}
				t, ok := row[ti].(json.Number)
				if !ok {
					return fmt.Errorf("influxdb %s: time %v is not epoch ns", server, row[ti])
				}
				tn, err := t.Int64()
				if err != nil {
					return fmt.Errorf("influxdb %s: time %v: %w", server, t, err)
				}
				val := Value{Kind: KindOther}
				has := row[fi] != nil
				if n, ok := row[fi].(json.Number); ok {
					if i, err := n.Int64(); err == nil {
						val = Value{Kind: KindInt, Int: i}
					} else if f, err := n.Float64(); err == nil {
						val = Value{Kind: KindFloat, Float: f}
					}
				}
				if err := c.Add(tags, has, val, tn, true); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}
