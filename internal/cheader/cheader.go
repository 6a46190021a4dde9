// Package cheader reads the numeric macros of a C header, so that tests can
// check the layouts C code addresses by hand against the Go constants
// they mirror.
package cheader

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
)

// Defines returns every "#define NAME VALUE" of the file at path whose
// name starts with prefix and whose value is a decimal or 0x number (a
// comment may follow it).
func Defines(path, prefix string) (map[string]int64, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	re := regexp.MustCompile(`(?m)^#define\s+(` + regexp.QuoteMeta(prefix) + `\w*)\s+(\d+|0x[0-9a-fA-F]+)\s*(?:/\*.*\*/|//.*)?$`)
	defs := map[string]int64{}
	for _, m := range re.FindAllStringSubmatch(string(src), -1) {
		v, err := strconv.ParseInt(m[2], 0, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %v", path, m[1], err)
		}
		defs[m[1]] = v
	}
	return defs, nil
}
