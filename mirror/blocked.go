package mirror

import (
	"regexp"

	"github.com/airlock-mirror/airlock/location"
)

// BlockedMatcher compiles blockedImages patterns (already validated by the config
// loader; invalid ones match nothing) into a predicate over references.
func BlockedMatcher(patterns []string) func(ref string) bool {
	var res []*regexp.Regexp
	for _, p := range patterns {
		if re, err := regexp.Compile(p); err == nil {
			res = append(res, re)
		}
	}
	return func(ref string) bool {
		ref = location.ImageRef(ref)
		for _, re := range res {
			if re.MatchString(ref) {
				return true
			}
		}
		return false
	}
}
