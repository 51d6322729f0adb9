package influx

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
)

// CheckURL says what is wrong with raw as the URL of an InfluxDB server: it
// must be http(s) with a host, and hold no credentials, which would be
// logged with it. The error quotes the URL redacted.
func CheckURL(raw string) error {
	switch u, err := url.Parse(raw); {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return fmt.Errorf("%q is not an http:// or https:// URL", RedactURL(raw))
	case u.User != nil:
		return fmt.Errorf("%q holds credentials (user:password@), which would be logged: put InfluxDB's token (1.8: \"user:password\") "+
			"in a file named by influx.token_file or in an environment variable named by influx.token_env, and take them out of the URL",
			RedactURL(raw))
	}
	return nil
}

// ReadToken reads a token from file, else from the environment variable
// env; "" when neither is named (an InfluxDB without authentication). A
// file that cannot be read is an *os.PathError.
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
