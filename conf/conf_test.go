package conf

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

type inner struct {
	Name  string        `yaml:"name"`
	Every time.Duration `yaml:"every"`
	Ring  int           `yaml:"ring"`
}

type testConfig struct {
	On    bool              `yaml:"on"`
	Rate  float64           `yaml:"rate"`
	Inner inner             `yaml:"inner"`
	List  []inner           `yaml:"list"`
	Tags  map[string]string `yaml:"tags"`
}

func defaults() testConfig {
	return testConfig{Rate: 1, Inner: inner{Name: "x", Every: time.Second, Ring: 64}}
}

// lines renders problems as "line key: reason" for comparison.
func lines(ps Problems) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "%d %s: %s\n", p.Line, p.Key, p.Reason)
	}
	return b.String()
}

func TestDecodeReportsEveryProblemAtItsLine(t *testing.T) {
	src := `on: yes
rate: fast
inner:
  every: 10
  colour: red
  ring: 9223372036854775808
list:
  - name: a
  -
tags:
  a: b
  a: c
on: true
`
	c := defaults()
	d, ps := Decode("t.yaml", []byte(src), &c)
	want := `1 on: want true or false, got "yes"
2 rate: want a number, got "fast"
4 inner.every: "10" is not a duration (write it with a unit: 500ms, 10s, 1m)
5 inner.colour: unknown key (known here: name, every, ring)
6 inner.ring: 9223372036854775808 is out of range for this key
9 list[1]: an empty list entry
12 tags.a: given twice (first on line 11)
13 on: given twice (first on line 1)
`
	if got := lines(ps); got != want {
		t.Errorf("problems:\n%s\nwant:\n%s", got, want)
	}
	// Every bad value is left at its default; the file's good ones are set.
	if c.On || c.Rate != 1 || c.Inner.Every != time.Second || c.Inner.Ring != 64 || len(c.List) != 0 {
		t.Errorf("decoded %+v", c)
	}
	if d.Lines["inner"] != 3 || d.Lines["list[0]"] != 8 || d.Line("inner.name") != 3 || d.Line("nothing") != 0 {
		t.Errorf("lines %v", d.Lines)
	}
	// A check's problem about a reported value is not reported again.
	checked := Problems{{Key: "inner.every", Reason: "must be positive"}, {Key: "list[0].name", Reason: "a"}, {Key: "inner.name", Reason: "b"}}
	if got := lines(d.Unreported(checked)); got != "0 inner.name: b\n" {
		t.Errorf("unreported: %q", got)
	}
}

func TestDecodeEmptyValuesKeepDefaults(t *testing.T) {
	c := defaults()
	c.List = []inner{{Name: "keep"}}
	_, ps := Decode("t.yaml", []byte("inner:\nlist: ~\nrate: 2\n"), &c)
	if len(ps) != 0 || c.Inner.Name != "x" || len(c.List) != 1 || c.Rate != 2 {
		t.Fatalf("%v: %+v", ps, c)
	}
	if _, ps := Decode("t.yaml", nil, &c); len(ps) != 0 {
		t.Fatalf("empty file: %v", ps)
	}
}

func TestDecodeSyntaxAndTopLevel(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"on: true\n  rate: 1\n", "2 yaml: mapping values are not allowed in this context\n"},
		{"- a\n- b\n", "1 (top level): want a mapping of keys, got a list\n"},
	} {
		c := defaults()
		d, ps := Decode("t.yaml", []byte(tc.src), &c)
		if got := lines(ps); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.src, got, tc.want)
		}
		if u := d.Unreported(Problems{{Key: "rate", Reason: "r"}}); len(u) != 0 {
			t.Errorf("%q: a file that did not decode still reports checks: %v", tc.src, u)
		}
	}
}

func TestLocateAndPlace(t *testing.T) {
	s := &Source{File: "f.yaml", Lines: map[string]int{"a": 2, "a.b": 3, "c[1]": 9}}
	var l List
	l.Add("a.b.x", "under b")
	l.Dup("c[1].name", "a.b", "same as %s", "a.b")
	l.Positive("zz", 0)
	l.AddErr(errors.New("plain"))
	l.AddErr(fmt.Errorf("wrapped: %w", Problems{{Key: "a", Reason: "w"}}))
	got := s.Locate(l.Problems).Error()
	want := `f.yaml:2: a: w
f.yaml:3: a.b.x: under b
f.yaml:9: c[1].name: same as a.b (a.b, line 3)
f.yaml: zz: must be positive, got 0s
f.yaml: plain`
	if got != want {
		t.Errorf("located:\n%s\nwant:\n%s", got, want)
	}
	err := s.Place(fmt.Errorf("building: %w", &KeyError{Key: "a.b", Reason: "no device"}))
	if err.Error() != "f.yaml:3: a.b: no device" {
		t.Errorf("placed: %v", err)
	}
	var nilSrc *Source
	if e := nilSrc.Place(KeyErr("k", "r")); e.Error() != "config: k: r" {
		t.Errorf("nil source: %v", e)
	}
	ps := Problems{{Key: "w", Reason: "r", Warning: true}, {Key: "e", Reason: "r"}}
	if len(ps.Errors()) != 1 || (Problems{}).Err() != nil || (&List{}).Err() != nil {
		t.Errorf("Errors/Err")
	}
	var ke *KeyError
	if !errors.As(error(ps), &ke) || ke.Key != "w" {
		t.Errorf("errors.As through Problems: %v", ke)
	}
}

func TestReadNamesTheFile(t *testing.T) {
	_, err := Read("/nonexistent/monagent.yaml")
	if err == nil || err.Error() != "/nonexistent/monagent.yaml: cannot read: no such file or directory" {
		t.Fatalf("%v", err)
	}
}

// FuzzDecode: any bytes give problems or a decoded value, never a panic,
// and every problem has a key and a reason.
func FuzzDecode(f *testing.F) {
	f.Add([]byte("on: true\ninner:\n  every: 1s\nlist:\n  - name: a\ntags: {a: b}\n"))
	f.Add([]byte("inner: &x\n  ring: 2\nlist: [*x, *x]\n"))
	f.Add([]byte("- [\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c := defaults()
		d, ps := Decode("f", b, &c)
		for _, p := range d.Locate(ps) {
			if p.Key == "" || p.Reason == "" {
				t.Fatalf("problem without key or reason: %+v", p)
			}
		}
	})
}

func TestExists(t *testing.T) {
	var l List
	l.Exists("a.dev", "no device", t.TempDir())
	l.Exists("b.dev", "no device", "/nonexistent/ptp9")
	if len(l.Problems) != 1 || l.Problems[0].Error() != "config: b.dev: no device: stat /nonexistent/ptp9: no such file or directory" {
		t.Fatalf("%v", l.Problems)
	}
}

func TestSeenNamesTheFirstEntry(t *testing.T) {
	s := Seen[string]{}
	for i, k := range []string{"a", "b", "a", "a", "b"} {
		first, again := s.Again(k, i)
		wantAgain := i >= 2
		wantFirst := map[string]int{"a": 0, "b": 1}[k]
		if again != wantAgain || (again && first != wantFirst) {
			t.Errorf("entry %d %q: Again = %d, %v; want %d, %v", i, k, first, again, wantFirst, wantAgain)
		}
	}
}

func TestNeedSortsAndSays(t *testing.T) {
	var n Need
	n.Add("a", 1<<20, "small")
	n.Add("none", 0, "left out")
	n.Add("b", 3<<20, "large")
	n.Add("c", 1<<20, "small too")
	for _, k := range []string{"d", "e"} {
		n.Add(k, 1<<19, "tiny")
	}
	n.Sort()
	if n.Total() != 6<<20 || n[0].Key != "b" || n[1].Key != "a" || n[2].Key != "c" {
		t.Fatalf("parts %v, total %d", n, n.Total())
	}
	want := "needs at most 6.0 MiB: b 3.0 MiB (large), a 1.0 MiB (small), c 1.0 MiB (small too), d 0.5 MiB (tiny), 1 more"
	if got := n.String(); got != want {
		t.Errorf("String:\n got %s\nwant %s", got, want)
	}
}

// TestDecodeInlineKeys: a struct field tagged ",inline" gives its keys to
// the mapping it is in, as yaml decodes them: they are known, checked and
// placed there, and its own name is no key.
func TestDecodeInlineKeys(t *testing.T) {
	type head struct {
		Name string `yaml:"name"`
		On   bool   `yaml:"on"`
	}
	type withHead struct {
		head  `yaml:",inline"`
		Every time.Duration `yaml:"every"`
	}
	var c withHead
	lp, ps := Decode("t.yaml", []byte("name: a\non: true\nevery: 2s\n"), &c)
	if len(ps) != 0 || c.Name != "a" || !c.On || c.Every != 2*time.Second || lp.Line("on") != 2 {
		t.Fatalf("%v: %+v", ps, c)
	}
	_, ps = Decode("t.yaml", []byte("name: b\non: maybe\nhead: {}\n"), &c)
	want := "2 on: want true or false, got \"maybe\"\n3 head: unknown key (known here: name, on, every)\n"
	if got := lines(ps); got != want {
		t.Errorf("problems:\n%s\nwant:\n%s", got, want)
	}
}

// Head is how decodeEntry starts.
type Head struct {
	Name string `yaml:"name"`
	Ring int    `yaml:"ring"`
}

// decodeEntry is a list entry with defaults, as the agent's are.
type decodeEntry struct {
	Head `yaml:",inline"`
	Tags []string `yaml:"tags"`
}

func (e *decodeEntry) UnmarshalYAML(n *yaml.Node) error {
	return DecodeOver(n, e, decodeEntry{Head: Head{Name: "def", Ring: 8}})
}

// hidden has a field DecodeOver cannot copy.
type hidden struct {
	inner `yaml:",inline"`
}

func (h *hidden) UnmarshalYAML(n *yaml.Node) error { return DecodeOver(n, h, hidden{}) }

// TestDecodeOverKeepsDefaults: each entry of a list starts from the
// defaults, keeps those its keys leave out and takes those it sets; a wrong
// value is an error, not a silent zero.
func TestDecodeOverKeepsDefaults(t *testing.T) {
	var l []decodeEntry
	if err := yaml.Unmarshal([]byte("- {name: a}\n- {ring: 2, tags: [x]}\n"), &l); err != nil {
		t.Fatal(err)
	}
	want := []decodeEntry{{Head: Head{Name: "a", Ring: 8}}, {Head: Head{Name: "def", Ring: 2}, Tags: []string{"x"}}}
	if fmt.Sprint(l) != fmt.Sprint(want) {
		t.Errorf("got %+v, want %+v", l, want)
	}
	if err := yaml.Unmarshal([]byte("- {ring: many}\n"), &l); err == nil {
		t.Error("ring: many decoded")
	}
	var h []hidden
	if err := yaml.Unmarshal([]byte("- {name: a}\n"), &h); err == nil || !strings.Contains(err.Error(), "field inner is unexported") {
		t.Errorf("unexported field: %v", err)
	}
}

// The value checks say what the value must be, in the words a person
// wrote the bounds in, and say nothing of a value that is fine.
func TestValueChecks(t *testing.T) {
	var l List
	Within(&l, "a", 26, 1, 25, " (PTP_MAX_SAMPLES)")
	Within(&l, "b", -1.0, 0, 1e6, "")
	Within(&l, "c", math.NaN(), 0, 1e6, "")
	Within(&l, "ok", 0.5, 0, 1, "")
	AtLeast(&l, "d", 500*time.Millisecond, time.Second, " (servers rate-limit faster clients)")
	AtLeast(&l, "e", 1, 2, " samples")
	AtLeast(&l, "ok", 2, 2, "")
	NotNegative(&l, "f", -3)
	NotNegative(&l, "ok", time.Duration(0))
	l.Set("g", "", ": the key authenticates")
	l.Set("ok", "x", "")
	l.NotEmpty("h", "")
	var got []string
	for _, ke := range l.Problems {
		got = append(got, ke.Key+": "+ke.Reason)
	}
	want := []string{
		"a: must be within 1..25 (PTP_MAX_SAMPLES), got 26",
		"b: must be within 0..1000000, got -1",
		"c: must be within 0..1000000, got NaN",
		"d: must be at least 1s (servers rate-limit faster clients), got 500ms",
		"e: must be at least 2 samples, got 1",
		"f: must not be negative, got -3",
		"g: must be set: the key authenticates",
		"h: must not be empty",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// hook is a list entry written as a string (its URL) or as a mapping.
type hook struct {
	URL    string `yaml:"url"`
	Header string `yaml:"header"`
}

func (hook) ShortForm() {}

func (h *hook) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*h = hook{URL: n.Value}
		return nil
	}
	return DecodeOver(n, h, hook{})
}

// TestDecodeStringOrEntry: a StringOrEntry list takes strings and mappings
// side by side; a mapping's keys are checked and placed as a struct's, a
// string is checked as a string.
func TestDecodeStringOrEntry(t *testing.T) {
	var c struct {
		Hooks []hook `yaml:"hooks"`
	}
	d, ps := Decode("t.yaml", []byte("hooks:\n  - http://a/x\n  - url: http://b/y\n    header: X-Key\n"), &c)
	if len(ps) != 0 || len(c.Hooks) != 2 || c.Hooks[0] != (hook{URL: "http://a/x"}) || c.Hooks[1] != (hook{URL: "http://b/y", Header: "X-Key"}) ||
		d.Line("hooks[1].header") != 4 {
		t.Fatalf("%v: %+v", ps, c)
	}
	_, ps = Decode("t.yaml", []byte("hooks:\n  - 12\n  - {url: http://b, token: x}\n  - [a]\n"), &c)
	want := "2 hooks[0]: want a string, got int \"12\" (quote it)\n3 hooks[1].token: unknown key (known here: url, header)\n4 hooks[2]: want a mapping of keys, got a list\n"
	if got := lines(ps); got != want {
		t.Errorf("problems:\n%s\nwant:\n%s", got, want)
	}
}
