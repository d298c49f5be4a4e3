//go:build !unix

package archive

import "errors"

func filesystemFree(string) (int64, error) {
	return 0, errors.New("free space is not known on this system")
}
