package influx

import (
	"net/url"
	"strings"
)

// RedactURL returns raw with the password of its user info replaced by
// "xxxxx", as url.URL.Redacted does; a string that does not parse as a URL
// is redacted the same way if it holds "scheme://user:password@".
func RedactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		return u.Redacted()
	}
	// Not a URL, or one whose user info url.Parse took for something else
	// ("user:password@host" reads as scheme "user").
	if start, info, ok := userInfo(raw); ok {
		if user, _, pass := strings.Cut(info, ":"); pass {
			return raw[:start] + user + ":xxxxx" + raw[start+len(info):]
		}
	}
	return raw
}

// userInfo finds the user info of a URL as written: where it starts and its
// text, up to (not including) the '@'.
func userInfo(raw string) (int, string, bool) {
	start := 0
	if i := strings.Index(raw, "://"); i >= 0 {
		start = i + 3
	}
	rest := raw[start:]
	if end := strings.IndexAny(rest, "/?#"); end >= 0 {
		rest = rest[:end]
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return 0, "", false
	}
	return start, rest[:at], true
}

// redactor returns raw redacted, and a replacer that takes raw, its user
// info as written and its password out of any text (an error that quotes the
// URL, a server's message), for every string the shipper stores or logs.
func redactor(raw string) (string, *strings.Replacer) {
	safe := RedactURL(raw)
	var pairs []string
	if safe != raw {
		pairs = append(pairs, raw, safe)
		if _, info, ok := userInfo(raw); ok {
			user, pass, _ := strings.Cut(info, ":")
			pairs = append(pairs, info+"@", user+":xxxxx@")
			if p, err := url.PathUnescape(pass); err == nil && len(p) >= 6 {
				pairs = append(pairs, p, "xxxxx")
			}
		}
	}
	return safe, strings.NewReplacer(pairs...)
}

// scrub takes the URL's credentials out of text.
func (s *Shipper) scrub(text string) string { return s.redact.Replace(text) }
