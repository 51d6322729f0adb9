package guest

import (
	"fmt"
	"os"
)

// Ask writes a request line for the host on the guest's console (the test
// binary's standard output): "powerdown" presses QEMU's power button.
func Ask(what string) {
	fmt.Fprintf(os.Stdout, "\n%srequest %s\n", Marker, what)
}

// Name is the guest's architecture when running inside one of the rig's
// guests ($MONAGENT_GUEST), else "".
func Name() string { return os.Getenv("MONAGENT_GUEST") }
