package timebase

import (
	"fmt"

	"golang.org/x/sys/unix"
)

func clockGetres(id int32) (int64, error) {
	var ts unix.Timespec
	if err := unix.ClockGetres(id, &ts); err != nil {
		return 0, fmt.Errorf("clock_getres(%d): %w", id, err)
	}
	return ts.Nano(), nil
}
