package guest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Ask writes a request line for the host on the guest's console (the test
// binary's standard output): "powerdown" presses QEMU's power button.
func Ask(what string) {
	fmt.Fprintf(os.Stdout, "\n%srequest %s\n", Marker, what)
}

// Name is the guest's architecture when running inside one of the rig's
// guests ($MONAGENT_GUEST), else "".
func Name() string { return os.Getenv("MONAGENT_GUEST") }

// PowerButton is the GPIO line wired to QEMU's power button in the ARM
// guest ($MONAGENT_GUEST_POWER_BUTTON, "chip:line"); ok is false outside it.
func PowerButton() (chip string, line int, ok bool, err error) {
	spec := os.Getenv("MONAGENT_GUEST_POWER_BUTTON")
	if spec == "" {
		return "", 0, false, nil
	}
	c, l, found := strings.Cut(spec, ":")
	n, err := strconv.Atoi(l)
	if !found || c == "" || err != nil {
		return "", 0, false, fmt.Errorf("MONAGENT_GUEST_POWER_BUTTON=%q: want chip:line", spec)
	}
	return c, n, true, nil
}
