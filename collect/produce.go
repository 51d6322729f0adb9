package collect

import (
	"context"
	"io"
)

// Ended is what Produce returns when its object failed with err: nil when
// ctx is done (the failure is the stop's doing), err otherwise.
func Ended(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// Use is a Produce's one opening of its object: open it, run use on it,
// close it; the open's error or use's is returned.
func Use[R io.Closer](open func() (R, error), use func(R) error) error {
	r, err := open()
	if err != nil {
		return err
	}
	defer r.Close()
	return use(r)
}
