package core

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSettingsParseArgsRemovesOptions(t *testing.T) {
	s := NewSettings(BaseSettings)
	kept, err := s.ParseArgs([]string{"-x", "--acp-size-smem", "0x1000", "file", "--acp-nprocs", "010", "last"})
	require.NoError(t, err)
	assert.Equal(t, []string{"-x", "file", "last"}, kept)
	assert.Equal(t, uint64(4096), s.Uint("size-smem"), "hex like strtoul")
	assert.Equal(t, 8, s.Int("nprocs"), "leading zero is octal like strtoul")
	assert.Equal(t, "command line", s.Source("size-smem"))
}

func TestSettingsRejectsBadOptions(t *testing.T) {
	for _, args := range [][]string{
		{"--acp-nosuch", "1"},
		{"--acp-size-smem=100"},
		{"--acp-size-smem"},
		{"--acp-size-smem", "-5"},
		{"--acp-nprocs", "0"},
		{"--acp-port-local", "80"},
		{"--acp-size-smem", "ten"},
		{"--acp-job-key", "secret"},
		{"--acp-bind", "socket"},
	} {
		_, err := NewSettings(BaseSettings).ParseArgs(args)
		assert.Error(t, err, "%q", args)
	}
}

// Every rejected number names the valid range (docs/decisions.md): a
// value of more than 64 bits is out of range, not "not a number".
func TestSettingsBadNumbersNameTheRange(t *testing.T) {
	for _, c := range []struct{ args []string }{
		{[]string{"--acp-size-smem", "99999999999999999999999"}},
		{[]string{"--acp-nprocs", "12abc"}},
		{[]string{"--acp-port-local", "0x"}},
		{[]string{"--acp-port-local", "80"}},
	} {
		_, err := NewSettings(BaseSettings).ParseArgs(c.args)
		require.Error(t, err, "%q", c.args)
		d := BaseSettings[0]
		for _, b := range BaseSettings {
			if b.Option() == c.args[0] {
				d = b
			}
		}
		assert.Contains(t, err.Error(), fmt.Sprintf("%d..%d", d.Min, d.Max), "%q", c.args)
	}
	_, err := NewSettings(BaseSettings).ParseArgs([]string{"--acp-size-smem", "99999999999999999999999"})
	assert.ErrorContains(t, err, "out of range")
}

func TestSettingsEnvironmentAndPrecedence(t *testing.T) {
	env := map[string]string{"ACP_SIZE_SMEM_DL": "2048", "ACP_PEER_TIMEOUT": "250ms", "ACP_SIZE_SMEM": "1"}
	s := NewSettings(BaseSettings)
	require.NoError(t, s.LoadEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok }))
	_, err := s.ParseArgs([]string{"--acp-size-smem", "99"})
	require.NoError(t, err)
	assert.Equal(t, uint64(2048), s.Uint("size-smem-dl"))
	assert.Equal(t, 250*time.Millisecond, s.Duration("peer-timeout"))
	assert.Equal(t, uint64(99), s.Uint("size-smem"), "the command line wins")
	assert.Equal(t, uint64(10240), s.Uint("size-smem-cl"), "standalone default")

	bad := NewSettings(BaseSettings)
	err = bad.LoadEnv(func(k string) (string, bool) {
		if k == "ACP_QUEUE_DEPTH" {
			return "0", true
		}
		return "", false
	})
	assert.ErrorContains(t, err, "ACP_QUEUE_DEPTH")
}

func TestSettingEnvNames(t *testing.T) {
	assert.Equal(t, "ACP_SIZE_SMEM_CL", Setting{Name: "size-smem-cl"}.Env())
	assert.Equal(t, "--acp-size-smem-cl", Setting{Name: "size-smem-cl"}.Option())
}

func TestLauncherDefaultsRankBelowEverythingElse(t *testing.T) {
	s := NewSettings(BaseSettings)
	env := map[string]string{"ACP_LAUNCHER_DEFAULTS": "size-smem=1024,size-smem-cl=1024,size-smem-dl=1024", "ACP_SIZE_SMEM_CL": "4096"}
	require.NoError(t, s.LoadEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok }))
	require.NoError(t, s.Set("size-smem-dl", "0", "the program's iacp_starter_memory_size_dl"))
	require.NoError(t, s.ApplyLauncherDefaults())
	assert.Equal(t, uint64(1024), s.Uint("size-smem"), "the launcher's default")
	assert.Equal(t, uint64(4096), s.Uint("size-smem-cl"), "the user's environment wins")
	assert.Equal(t, uint64(0), s.Uint("size-smem-dl"), "the program's variable wins")
	bad := NewSettings(BaseSettings)
	require.NoError(t, bad.Set("launcher-defaults", "size-smem", "test"))
	assert.Error(t, bad.ApplyLauncherDefaults())
}
