package conf

import (
	"errors"
	"strings"
)

// Source is where a configuration came from: the file's name and the line
// of every key it sets. A nil *Source places nothing.
type Source struct {
	File  string
	Lines map[string]int // dotted key path → line
}

// Locate gives each problem the file and the line of its key; for a key the
// file leaves out, the line of the nearest enclosing key it sets. The result
// is sorted by line.
func (s *Source) Locate(ps Problems) Problems {
	if s != nil {
		for _, ke := range ps {
			if ke.File == "" {
				ke.File = s.File
			}
			if ke.Line == 0 {
				ke.Line = s.Line(ke.Key)
			}
			if ke.Also != "" && ke.AlsoLine == 0 {
				ke.AlsoLine = s.Line(ke.Also)
			}
		}
	}
	ps.Sort()
	return ps
}

// Line is the line of key, or of the nearest enclosing key the file sets; 0
// when there is none.
func (s *Source) Line(key string) int {
	for k := key; k != ""; {
		if l := s.Lines[k]; l > 0 {
			return l
		}
		if i := strings.LastIndexAny(k, ".["); i >= 0 {
			k = k[:i]
		} else {
			k = ""
		}
	}
	return 0
}

// Place gives a problem found after decoding (a *KeyError, or Problems,
// perhaps wrapped) its file and line, and returns it: one line naming file,
// line, key and reason. Other errors are returned as they are.
func (s *Source) Place(err error) error {
	var ps Problems
	var ke *KeyError
	switch {
	case errors.As(err, &ps):
		return s.Locate(ps).Err()
	case errors.As(err, &ke):
		s.Locate(Problems{ke})
		return ke // a wrapper's text was made before the line was known
	}
	return err
}
