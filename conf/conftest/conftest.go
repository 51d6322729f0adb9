// Package conftest tests a library's configuration section (one with
// exported Defaults and Check, as status.HTTPConfig or spool.Config): each
// case changes the defaults and names the problem Check must find.
package conftest

import (
	"strings"
	"testing"

	"github.com/monagent/monagent/conf"
)

// Section is a section's pointer type.
type Section[T any] interface {
	*T
	Defaults()
	Check(p *conf.List)
}

// Checks runs every case on a section at its defaults, then set by start
// (nil for none), then changed by the case, and fails t unless Check finds
// no problem where the case wants "" and else exactly one holding what it
// wants (a part of its text: key and reason).
func Checks[T any, P Section[T]](t testing.TB, start func(*T), cases []struct {
	Change func(*T)
	Want   string
}) {
	t.Helper()
	for _, c := range cases {
		var s T
		P(&s).Defaults()
		if start != nil {
			start(&s)
		}
		c.Change(&s)
		var p conf.List
		P(&s).Check(&p)
		got := p.Problems.Error()
		if c.Want == "" && len(p.Problems) != 0 || c.Want != "" && (len(p.Problems) != 1 || !strings.Contains(got, c.Want)) {
			t.Errorf("%+v: %q, want %q", s, got, c.Want)
		}
	}
}
