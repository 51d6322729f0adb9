package gpio

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestParseInterruptsFixtures(t *testing.T) {
	b, err := os.ReadFile("testdata/interrupts-amd64-guest.txt")
	if err != nil {
		t.Fatal(err)
	}
	irqs, err := ParseInterrupts(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(irqs) != 7 {
		t.Fatalf("%d numbered rows: %+v", len(irqs), irqs)
	}
	if want := (IRQ{Number: 24, Count: 2000, Chip: "gpio-sim", HWIRQ: "0", Names: []string{"monagent-gpiochip1"}}); !reflect.DeepEqual(irqs[3], want) {
		t.Errorf("row 24: %+v, want %+v", irqs[3], want)
	}
	if want := (IRQ{Number: 0, Count: 45, Chip: "IO-APIC", Names: []string{"2-edge timer"}}); !reflect.DeepEqual(irqs[0], want) {
		t.Errorf("row 0: %+v, want %+v", irqs[0], want)
	}
	got, err := LineIRQCounts(irqs, "monagent-gpiochip1", []int{0, 3, 7})
	if want := map[int]uint64{0: 2000, 3: 12}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("line counts %v, %v; want %v (line 7 has no IRQ)", got, err, want)
	}

	b, err = os.ReadFile("testdata/interrupts-arm-guest.txt")
	if err != nil {
		t.Fatal(err)
	}
	irqs, err = ParseInterrupts(b)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := LineIRQCounts(irqs, "monagent-button", []int{3}); err != nil || got[3] != 6 {
		t.Errorf("PL061 line 3: %v, %v", got, err)
	}
	if got, err := LineIRQCounts(irqs, "shared-b", []int{5}); err != nil || got[5] != 2 {
		t.Errorf("shared IRQ: %v, %v", got, err)
	}
}

func TestLineIRQCountsAmbiguous(t *testing.T) {
	irqs := []IRQ{
		{Number: 30, Count: 1, Chip: "gpio-sim", HWIRQ: "2", Names: []string{"monagent"}},
		{Number: 31, Count: 5, Chip: "pl061", HWIRQ: "2", Names: []string{"monagent"}},
	}
	_, err := LineIRQCounts(irqs, "monagent", []int{2})
	if err == nil || !strings.Contains(err.Error(), `2 IRQs named "monagent" with hardware IRQ 2`) {
		t.Errorf("ambiguous rows: %v", err)
	}
}

func TestParseInterruptsErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "does not list CPUs"},
		{"garbage\n", "does not list CPUs"},
		{"  CPU0 CPU1\n 5: 1\n", "line 2 (IRQ 5): 1 counts for 2 CPUs"},
		{"  CPU0\n 5: x1 chip 0 name\n", `line 2 (IRQ 5): count "x1"`},
	} {
		_, err := ParseInterrupts([]byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v; want %q", c.in, err, c.want)
		}
	}
}

func FuzzParseInterrupts(f *testing.F) {
	for _, p := range []string{"testdata/interrupts-amd64-guest.txt", "testdata/interrupts-arm-guest.txt"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("CPU0\n 1: 2 c 3 Edge a, b\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		irqs, err := ParseInterrupts(b)
		if err != nil {
			return
		}
		for _, q := range irqs {
			if q.HWIRQ != "" && !isDigits(q.HWIRQ) {
				t.Fatalf("hwirq %q", q.HWIRQ)
			}
			for _, n := range q.Names {
				if n == "" || strings.Contains(n, ",") {
					t.Fatalf("name %q", n)
				}
			}
		}
		LineIRQCounts(irqs, "monagent", []int{0, 1, 2})
	})
}
