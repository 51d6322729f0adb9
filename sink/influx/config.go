package influx

import (
	"fmt"
	"net/url"
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
