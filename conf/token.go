package conf

import (
	"errors"
	"os"
	"strings"
)

// ReadToken reads a token from file, else from the environment variable
// env; "" when neither is named (a server without authentication). A file
// that cannot be read is an *os.PathError. The token is a secret: callers
// never put it in an error or a log.
func ReadToken(file, env string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		return strings.TrimSpace(string(b)), err
	}
	if env != "" {
		return os.Getenv(env), nil
	}
	return "", nil
}

// PathReason is an error's text without the operation an *os.PathError
// names ("open"): the path and what went wrong.
func PathReason(err error) string {
	if pe := (*os.PathError)(nil); errors.As(err, &pe) {
		return pe.Path + ": " + pe.Err.Error()
	}
	return err.Error()
}
