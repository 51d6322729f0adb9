package influx

import (
	"reflect"
	"testing"
)

// goldenAnswers are real servers' answers to writes. 1.8: captured from the
// testbed's influxd 1.8.10 (TestGoldenAnswers18 captures them again), but for
// the shard, engine and auth rows, from its services/httpd, coordinator and
// tsdb sources. 2.x:
// v2.7.11 http/write_handler.go, http/points/points_parser.go and
// models/points.go. 3.x Core: influxdb3_server/src/http.rs and tests.rs
// (write_lp with accept_partial, the default; /api/v2/write on 3.0-3.4 and
// 3.5+, where accept_partial is false). InfluxDB 3 Cloud (IOx): the router's
// end-to-end test of atomic writes.
var goldenAnswers = []struct {
	name        string
	status      int
	body        string
	action      action
	state       string
	cause       string
	lines       []lineError
	restWritten bool
	complete    bool
}{
	// InfluxDB 1.8
	{name: "1.8 field type conflict", status: 400,
		body:   `{"error":"partial write: field type conflict: input field \"v\" on measurement \"m\" is type string, already exists as type integer dropped=1"}` + "\n",
		action: reject, state: StateBadAnswer, cause: causeSchema},
	{name: "1.8 parse errors, rest written", status: 400,
		body:   `{"error":"partial write: unable to parse 'm v= 6': missing field value\nunable to parse 'm,t=x 7': invalid field format dropped=0"}` + "\n",
		action: reject, state: StateBadAnswer, cause: causeSyntax,
		lines: []lineError{{record: "m v= 6': missing field value"}, {record: "m,t=x 7': invalid field format"}}, restWritten: true, complete: true},
	{name: "1.8 parse errors, nothing written", status: 400,
		body:   `{"error":"unable to parse 'm v= 6': missing field value\nunable to parse 'm,t=x 7': invalid field format"}` + "\n",
		action: reject, state: StateBadAnswer, cause: causeSyntax,
		lines: []lineError{{record: "m v= 6': missing field value"}, {record: "m,t=x 7': invalid field format"}}, complete: true},
	{name: "1.8 beyond retention", status: 400,
		body:   `{"error":"partial write: points beyond retention policy dropped=2"}` + "\n",
		action: reject, state: StateBadAnswer, cause: causeRetention},
	{name: "1.8 database not found", status: 404, body: `{"error":"database not found: \"nope\""}` + "\n", action: hold, state: StateNotFound},
	{name: "1.8 bucket without rp", status: 404,
		body:   `{"error":"bucket name \"\" is missing a slash; not in \"database/retention-policy\" format"}` + "\n",
		action: hold, state: StateNotFound},
	{name: "1.8 max-body-size", status: 413, body: `{"error":"Request Entity Too Large"}` + "\n", action: tooLarge, state: StateTooLarge, cause: causeTooLarge},
	{name: "1.8 shard pending deletion", status: 400, body: `{"error":"partial write: shard 12 is pending deletion dropped=5"}`, action: retry, state: StateServerError},
	{name: "1.8 engine", status: 500, body: `{"error":"engine: cache-max-memory-size exceeded: (1073741824/1073741824)"}`, action: retry, state: StateServerError},
	{name: "1.8 auth", status: 401, body: `{"error":"authorization failed"}`, action: hold, state: StateUnauthorized},
	// InfluxDB 2.x
	{name: "2.x parse error", status: 400,
		body:   `{"code":"invalid","message":"unable to parse 'm v= 6': missing field value"}`,
		action: reject, state: StateBadAnswer, cause: causeSyntax,
		lines: []lineError{{record: "m v= 6': missing field value"}}, complete: true},
	{name: "2.x field type conflict", status: 422,
		body:   `{"code":"unprocessable entity","message":"failure writing points to database: partial write: field type conflict: input field \"v\" on measurement \"m\" is type string, already exists as type integer dropped=1"}`,
		action: reject, state: StateBadAnswer, cause: causeSchema},
	{name: "2.x too large", status: 413,
		body:   `{"code":"request too large","message":"unable to read data: points batch is too large"}`,
		action: tooLarge, state: StateTooLarge, cause: causeTooLarge},
	{name: "2.x bucket not found", status: 404, body: `{"code":"not found","message":"bucket not found"}`, action: hold, state: StateNotFound},
	{name: "2.x forbidden", status: 403, body: `{"code":"forbidden","message":"insufficient permissions for write"}`, action: hold, state: StateForbidden},
	{name: "2.x unauthorized", status: 401, body: `{"code":"unauthorized","message":"unauthorized access"}`, action: hold, state: StateUnauthorized},
	{name: "2.x invalid precision", status: 400, body: `{"code":"invalid","message":"invalid precision; valid precision units are ns, us, ms, and s"}`, action: hold, state: StateBadRequest},
	{name: "2.x internal", status: 500, body: `{"code":"internal error","message":"unexpected error writing points to database: timeout"}`, action: retry, state: StateServerError},
	{name: "2.x cloud throttled", status: 429, body: `{"code":"too many requests","message":"exceeded rate limit"}`, action: retry, state: StateThrottled},
	// InfluxDB 3 Core
	{name: "3.x write_lp partial write", status: 400,
		body:   `{"error":"partial write of line protocol occurred","data":[{"error_message":"No fields were provided","line_number":2,"original_line":"cpu,host=a val= 123"}]}`,
		action: reject, state: StateBadAnswer, cause: causeOther,
		lines: []lineError{{n: 2, line: "cpu,host=a val= 123", reason: "No fields were provided"}}, restWritten: true, complete: true},
	{name: "3.x schema limit", status: 422,
		body:   `{"error":"partial write of line protocol occurred","data":[{"error_message":"Update to schema would exceed number of columns per table limit of 500 columns","line_number":1,"original_line":"m a=1"}]}`,
		action: reject, state: StateBadAnswer, cause: causeOther,
		lines: []lineError{{n: 1, line: "m a=1", reason: "Update to schema would exceed number of columns per table limit of 500 columns"}}, restWritten: true, complete: true},
	{name: "3.0-3.4 v2 parse error", status: 400,
		body:   `{"error":"parsing failed for write_lp endpoint","data":{"original_line":"cpu,host=a val= 123","line_number":1,"error_message":"No fields were provided"}}`,
		action: reject, state: StateBadAnswer, cause: causeSyntax,
		lines: []lineError{{n: 1, line: "cpu,host=a val= 123", reason: "No fields were provided"}}},
	{name: "3.10 parse error", status: 400,
		body:   `{"error":"line protocol parsing error","data":{"error_message":"No fields were provided","line_number":1,"original_line":"cpu,host=a val= 123"}}`,
		action: reject, state: StateBadAnswer, cause: causeSyntax,
		lines: []lineError{{n: 1, line: "cpu,host=a val= 123", reason: "No fields were provided"}}},
	{name: "3.5+ v2 parse error", status: 400,
		body:   `{"code":"invalid","message":"write buffer error: line protocol parse failed: Field type mismatch on table m column v. Existing column is i64 but attempted to add string"}`,
		action: reject, state: StateBadAnswer, cause: causeSchema},
	{name: "3.5+ v2 missing bucket", status: 400, body: `{"code":"invalid","message":"missing query parameter 'db'"}`, action: hold, state: StateBadRequest},
	{name: "3.x unauthenticated", status: 401, body: `{"error": "the request was not authenticated"}`, action: hold, state: StateUnauthorized},
	{name: "3.x malformed authorization", status: 400,
		body:   `{"error": "Authorization header was malformed, the request was not in the form of 'Authorization: <auth-scheme> <token>', supported auth-schemes are Bearer, Token and Basic"}`,
		action: hold, state: StateBadRequest},
	{name: "3.x request size", status: 413, body: `max request size (10485760 bytes) exceeded`, action: tooLarge, state: StateTooLarge, cause: causeTooLarge},
	{name: "3.5+ v2 request size", status: 413, body: `{"code":"request too large","message":"max request size (10485760 bytes) exceeded"}`, action: tooLarge, state: StateTooLarge, cause: causeTooLarge},
	{name: "3.x overloaded", status: 429, body: `this service is overloaded, please try again later`, action: retry, state: StateThrottled},
	{name: "3.x database not found", status: 404, body: `Database not found foo`, action: hold, state: StateNotFound},
	// InfluxDB 3 Cloud (IOx)
	{name: "IOx atomic parse errors", status: 400,
		body:   `{"code":"invalid","line":2,"message":"failed to parse line protocol: errors encountered on line(s):\nerror parsing line 2 (1-based): Invalid measurement was provided\nerror parsing line 4 (1-based): Unable to parse timestamp value '123461000000000000000000000000'"}`,
		action: reject, state: StateBadAnswer, cause: causeSyntax,
		lines: []lineError{{n: 2, reason: "Invalid measurement was provided"}, {n: 4, reason: "Unable to parse timestamp value '123461000000000000000000000000'"}}},
	// Proxies and the unexpected
	{name: "proxy html 400", status: 400, body: "<html><body><h1>400 Bad Request</h1></body></html>", action: unexplained, state: StateBadAnswer, cause: causeUnexplained},
	{name: "cut-off JSON 400", status: 400, body: `{"error":"partial wri`, action: unexplained, state: StateBadAnswer, cause: causeUnexplained},
	{name: "empty 400", status: 400, body: "", action: unexplained, state: StateBadAnswer, cause: causeUnexplained},
	{name: "unknown reason 400", status: 400, body: `{"message":"something new"}`, action: unexplained, state: StateBadAnswer, cause: causeUnexplained},
	{name: "proxy 502", status: 502, body: "<html>Bad Gateway</html>", action: retry, state: StateServerError},
	{name: "proxy 413", status: 413, body: "<html>413 Request Entity Too Large</html>", action: tooLarge, state: StateTooLarge, cause: causeTooLarge},
	{name: "method not allowed", status: 405, body: "", action: hold, state: StateBadAnswer},
}

// TestParseAnswer: every answer InfluxDB 1.8, 2.x and 3.x gives a write is
// classified as docs/influx.md says, with the lines it names.
func TestParseAnswer(t *testing.T) {
	for _, g := range goldenAnswers {
		t.Run(g.name, func(t *testing.T) {
			a := parseAnswer(g.status, []byte(g.body), "")
			if a.action != g.action || a.state != g.state || a.cause != g.cause || a.status != g.status {
				t.Errorf("action %v state %s cause %q status %d, want %v %s %q %d (%q)", a.action, a.state, a.cause, a.status, g.action, g.state, g.cause, g.status, a.msg)
			}
			if !reflect.DeepEqual(a.lines, g.lines) || a.restWritten != g.restWritten || a.complete != g.complete {
				t.Errorf("lines %+v rest written %v complete %v, want %+v %v %v", a.lines, a.restWritten, a.complete, g.lines, g.restWritten, g.complete)
			}
			if a.msg == "" {
				t.Error("no message")
			}
		})
	}
}

// TestParseAnswerFromHeader: without the body (a fake, a read failure), 1.8's
// X-Influxdb-Error header says the same, its records joined by spaces; cut at
// 1024 bytes, it no longer names every line.
func TestParseAnswerFromHeader(t *testing.T) {
	a := parseAnswer(400, nil, "partial write: unable to parse 'm v= 6': missing field value unable to parse 'm,t=x 7': invalid field format dropped=0")
	want := []lineError{{record: "m v= 6': missing field value"}, {record: "m,t=x 7': invalid field format"}}
	if a.action != reject || !reflect.DeepEqual(a.lines, want) || !a.restWritten || !a.complete {
		t.Fatalf("%+v", a)
	}
	long := "partial write: unable to parse 'm v= 6': missing field value" + string(make([]byte, 1000)) + " dropped=0"
	if a := parseAnswer(400, nil, long[:1024]); a.complete {
		t.Fatalf("a cut header names every line: %+v", a)
	}
}

// TestMatchNamed: named lines are found by number (checked against the
// quoted text where there is one) or by text; an answer that does not fit the
// lines finds none.
func TestMatchNamed(t *testing.T) {
	ls := splitLines([]byte("m v=1i 1\nm v= 2\nm,t=x 3\nm v=1i 1\nm v=\"s\" 4\n"), 5)
	cases := []struct {
		name  string
		named []lineError
		want  map[int]string
		all   bool
	}{
		{"quoted", []lineError{{record: "m v= 2': missing field value"}, {record: "m,t=x 3': invalid field format"}}, map[int]string{1: "missing field value", 2: "invalid field format"}, true},
		{"quoted twice", []lineError{{record: "m v=1i 1': dup"}, {record: "m v=1i 1': dup"}}, map[int]string{0: "dup", 3: "dup"}, true},
		{"quoted unknown", []lineError{{record: "x v= 2': missing"}, {record: "m v= 2': missing field value"}}, map[int]string{1: "missing field value"}, false},
		{"numbered", []lineError{{n: 2, reason: "no fields"}, {n: 5, line: `m v="s" 4`, reason: "type"}}, map[int]string{1: "no fields", 4: "type"}, true},
		{"numbered, 3.x re-formats", []lineError{{n: 5, line: `m v="s" 4i`, reason: "type"}}, map[int]string{4: "type"}, true},
		{"numbered, text elsewhere", []lineError{{n: 1, line: "m,t=x 3", reason: "bad"}}, map[int]string{2: "bad"}, true},
		{"numbered, another line", []lineError{{n: 1, line: "other v=1", reason: "bad"}}, nil, false},
		{"number out of range", []lineError{{n: 6, reason: "bad"}}, nil, false},
		{"text only", []lineError{{line: "m v= 2", reason: "bad"}}, map[int]string{1: "bad"}, true},
	}
	for _, c := range cases {
		got, all := matchNamed(ls, c.named)
		if len(got) == 0 && len(c.want) == 0 {
			got = nil
		}
		if !reflect.DeepEqual(got, c.want) || all != c.all {
			t.Errorf("%s: %v %v, want %v %v", c.name, got, all, c.want, c.all)
		}
	}
}
