package agent

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// goroutine is a live goroutine: its stack and the goroutine that created
// it.
type goroutine struct {
	stack, parent string
}

// goroutines are the live goroutines by ID.
func goroutines() map[string]goroutine {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[string]goroutine{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		id, _, ok := strings.Cut(strings.TrimPrefix(g, "goroutine "), " ")
		if !ok {
			continue
		}
		parent := ""
		if _, in, ok := strings.Cut(g, "\ncreated by "); ok {
			if _, p, ok := strings.Cut(in, " in goroutine "); ok {
				parent, _, _ = strings.Cut(p, "\n")
			}
		}
		out[id] = goroutine{stack: g, parent: parent}
	}
	return out
}

// thisGoroutine is the calling goroutine's ID.
func thisGoroutine() string {
	buf := make([]byte, 64)
	id, _, _ := strings.Cut(strings.TrimPrefix(string(buf[:runtime.Stack(buf, false)]), "goroutine "), " ")
	return id
}

// startedHere are the stacks of the goroutines alive now, not in before,
// that this goroutine started, or that those started (while they are
// alive: the runtime names only a goroutine's creator): what the code this
// goroutine ran since before has left running. Goroutines an earlier test
// left behind, and what they start, are not counted.
func startedHere(before map[string]goroutine) []string {
	now := goroutines()
	ours := map[string]bool{thisGoroutine(): true}
	for grew := true; grew; {
		grew = false
		for id, g := range now {
			if _, old := before[id]; !old && !ours[id] && ours[g.parent] {
				ours[id], grew = true, true
			}
		}
	}
	var out []string
	for id, g := range now {
		if _, old := before[id]; !old && ours[id] && id != thisGoroutine() {
			out = append(out, g.stack)
		}
	}
	return out
}

// noneStartedHere fails when the code this goroutine ran since before left
// goroutines running, waiting up to wait for those that are ending.
func noneStartedHere(t *testing.T, before map[string]goroutine, wait time.Duration, what string) {
	t.Helper()
	left := startedHere(before)
	for deadline := time.Now().Add(wait); len(left) > 0 && time.Now().Before(deadline); left = startedHere(before) {
		time.Sleep(10 * time.Millisecond) // exiting goroutines are still listed for a moment
	}
	if len(left) > 0 {
		t.Fatalf("%s: %d goroutines:\n%s", what, len(left), strings.Join(left, "\n\n"))
	}
}

// startedHereBecomes waits up to 10 s for startedHere(before) to count want
// goroutines, and fails with the last count if it does not.
func startedHereBecomes(t *testing.T, before map[string]goroutine, want int, what string) {
	t.Helper()
	n := len(startedHere(before))
	for deadline := time.Now().Add(10 * time.Second); n != want && time.Now().Before(deadline); n = len(startedHere(before)) {
		time.Sleep(10 * time.Millisecond)
	}
	if n != want {
		t.Errorf("%d goroutines %s, want %d", n, what, want)
	}
}

// The helper tells what the test started from what was there before.
func TestStartedHere(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	go func() { <-stop }() // there before
	before := goroutines()
	done := make(chan struct{})
	go func() { // started here, and it starts another
		go func() { <-stop }()
		<-done
	}()
	// Each count is waited for (up to 10 s), not read after a fixed 20 ms: on
	// a loaded machine the parent may not have started its child, or ended,
	// 20 ms on. A helper that miscounts never reaches the count.
	startedHereBecomes(t, before, 2, "started here")
	close(done)
	// The parent ended: its child is no longer known to be ours.
	startedHereBecomes(t, before, 0, "started here after the parent ended")
	go func() { <-stop }()
	if n := len(startedHere(before)); n != 1 {
		t.Errorf("%d goroutines started here, want the one just started", n)
	}
}
