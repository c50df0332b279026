package main

import (
	"testing"

	"github.com/tilesieve/tilesieve/shared/config"
	"github.com/tilesieve/tilesieve/shared/testkit/cmdtest"
)

// runAsCommand makes this test binary the tiles command in a subprocess,
// so TestHelp drives the real main: its arguments and its exit status.
const runAsCommand = "TILESIEVE_TEST_RUN_TILES"

func TestMain(m *testing.M) { cmdtest.Main(m, runAsCommand, main) }

// TestHelp: -h, -help, --help and help print one usage text on stdout and
// exit 0 with no configuration at all; it says what the binary is, that
// its configuration is the environment, where that is documented, and
// lists every variable. Any other argument is bad usage.
func TestHelp(t *testing.T) {
	t.Parallel()
	var vars []string
	for _, v := range config.TilesVars() {
		vars = append(vars, v.Name)
	}
	cmdtest.CheckHelp(t, cmdtest.Help{Command: "tiles", AsCommand: runAsCommand, Vars: vars,
		Says: []string{"tilesieve's tile function", "reads its configuration from the environment", "defaults;\ndocs/configuration.md says what each does"}})
}
