package gpio

import (
	"fmt"
	"slices"
	"strings"
)

// The settings' names, as String gives them and Parse takes them.
var (
	clockNames  = []string{ClockMonotonic: "monotonic", ClockRealtime: "realtime", ClockHTE: "hte"}
	detectNames = []string{DetectRising: "rising", DetectFalling: "falling", DetectBoth: "both"}
	biasNames   = []string{BiasAsIs: "as_is", BiasPullUp: "pull_up", BiasPullDown: "pull_down", BiasDisabled: "disabled"}
)

// ParseEventClock is the event clock named s: monotonic, realtime or hte.
func ParseEventClock(s string) (EventClock, error) { return parseName[EventClock](clockNames, s) }

// ParseEdgeDetect is the edge detection named s: rising, falling or both.
func ParseEdgeDetect(s string) (EdgeDetect, error) { return parseName[EdgeDetect](detectNames, s) }

// ParseBias is the bias named s: as_is, pull_up, pull_down or disabled.
func ParseBias(s string) (Bias, error) { return parseName[Bias](biasNames, s) }

// parseName is the value named s in names; the error lists the names.
func parseName[T ~uint8](names []string, s string) (T, error) {
	if i := slices.Index(names, s); i >= 0 && s != "" {
		return T(i), nil
	}
	want := slices.Sorted(slices.Values(slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == "" })))
	return 0, fmt.Errorf("%q: want %s", s, strings.Join(want, ", "))
}
