package cheader

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.h")
	require.NoError(t, os.WriteFile(path, []byte(`#define X_A 1
#define X_B    0x40
#define  X_C	7
#define Y_D 3
#define X_E (1 << 3)
#define X_F 12 /* a comment */
 #define X_G 5
#define X_H 9
`), 0o644))
	defs, err := Defines(path, "X_")
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"X_A": 1, "X_B": 64, "X_C": 7, "X_F": 12, "X_H": 9}, defs)

	_, err = Defines(filepath.Join(t.TempDir(), "missing.h"), "X_")
	assert.Error(t, err)
}
