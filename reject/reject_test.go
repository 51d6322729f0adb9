package reject

import (
	"errors"
	"fmt"
	"testing"
)

type reason uint8

const (
	none reason = iota
	short
	bogus
)

var names = []string{"none", "short", "bogus"}

func (r reason) String() string { return Name(names, uint8(r)) }

type other uint8

func (o other) String() string { return "other" }

func TestErrorAndOf(t *testing.T) {
	err := fmt.Errorf("server x: %w", Errorf("ntp reply", bogus, "negative delay %d ns", -5))
	if got := err.Error(); got != "server x: ntp reply rejected (bogus): negative delay -5 ns" {
		t.Errorf("message %q", got)
	}
	if got := Of[reason](err); got != bogus {
		t.Errorf("Of = %v, want bogus", got)
	}
	if got := Of[other](err); got != 0 {
		t.Errorf("Of of another reason type = %v, want its zero", got)
	}
	if got := Of[reason](errors.New("short")); got != none {
		t.Errorf("Of of a plain error = %v, want none", got)
	}
	if got := reason(9).String(); got != "reject(9)" {
		t.Errorf("an unnamed reason is %q", got)
	}
}
