// Package closing closes what a type holds open only while it is in use (a
// socket, a file it reopens), so that its Close may be called at any time,
// and again.
package closing

// Clear closes *c, unless it is nil (never opened, or closed already), and
// sets it to nil, so that closing again does nothing.
func Clear[C interface {
	comparable
	Close() error
}](c *C) error {
	var none C
	if *c == none {
		return nil
	}
	err := (*c).Close()
	*c = none
	return err
}
