package main

import (
	"bytes"
	"context"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"plainkube.dev/plainkube/internal/apiserver"
)

// testFlags is a flag set like a daemon's: a few flags of each kind.
func testFlags() (*flag.FlagSet, *daemonFlags, *int, *[]string, *bool) {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	fs.SetOutput(&bytes.Buffer{})
	d := addDaemonFlags(fs)
	port := fs.Int("port", 6443, "")
	var plugins []string
	fs.Var(listFlag{&plugins}, "disable-admission-plugins", "")
	disable := fs.Bool("disable-node", false, "")
	return fs, d, port, &plugins, disable
}

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestConfigFile: the file sets the flags the command line does not, a
// list becomes a comma-separated flag, the command line wins; what
// --print-config writes reads back the same.
func TestConfigFile(t *testing.T) {
	path := writeConfig(t, "port: 7443\ndisable-admission-plugins: [PodSecurity, LimitRanger]\ndisable-node: true\nlog-format: json\n")
	fs, d, port, plugins, disable := testFlags()
	if printed, err := d.parse(fs, []string{"--config", path, "--port", "8443"}); printed || err != nil {
		t.Fatalf("parse: %v %v", printed, err)
	}
	if *port != 8443 || strings.Join(*plugins, ",") != "PodSecurity,LimitRanger" || !*disable || *d.logFormat != "json" {
		t.Fatalf("port %d, plugins %v, disable-node %v, log-format %s", *port, *plugins, *disable, *d.logFormat)
	}
	var out bytes.Buffer
	if err := printConfig(&out, fs); err != nil {
		t.Fatal(err)
	}
	fs2, d2, port2, plugins2, disable2 := testFlags()
	if _, err := d2.parse(fs2, []string{"--config", writeConfig(t, out.String())}); err != nil {
		t.Fatalf("reading back:\n%s\n%v", out.String(), err)
	}
	if *port2 != 8443 || strings.Join(*plugins2, ",") != "PodSecurity,LimitRanger" || !*disable2 || *d2.logFormat != "json" {
		t.Fatalf("read back: port %d, plugins %v, disable-node %v, log-format %s\n%s", *port2, *plugins2, *disable2, *d2.logFormat, out.String())
	}
	if l, err := d2.logger(); err != nil || l == nil || l.Enabled(context.Background(), slog.LevelDebug) {
		t.Fatalf("logger: %v", err)
	}
	// -v=3 logs each API request (apiserver.RequestLogLevel), not debug.
	*d2.verbosity = 3
	if l, err := d2.logger(); err != nil || !l.Enabled(context.Background(), apiserver.RequestLogLevel) || l.Enabled(context.Background(), slog.LevelDebug) {
		t.Fatalf("-v=3: %v", err)
	}
}

// TestConfigFileErrors: what a file or flag gets wrong is refused with the
// key named; the default file may be absent, a named one may not.
func TestConfigFileErrors(t *testing.T) {
	for _, c := range []struct{ name, text, want string }{
		{"unknown key", "nope: 1\n", `"nope" is not a flag of 'plainkube server'`},
		{"config in the file", "config: /x\n", `"config" is not a flag`},
		{"bad value", "port: seven\n", "port: parse error"},
		{"map value", "port: {a: 1}\n", "is not a flag value"},
		{"not YAML", "port: [\n", "config file"},
	} {
		fs, d, _, _, _ := testFlags()
		_, err := d.parse(fs, []string{"--config", writeConfig(t, c.text)})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	fs, d, _, _, _ := testFlags()
	if _, err := d.parse(fs, []string{"--config", filepath.Join(t.TempDir(), "missing.yaml")}); err == nil {
		t.Error("a named file that is missing was not refused")
	}
	fs, d, _, _, _ = testFlags()
	*d.config = filepath.Join(t.TempDir(), "missing.yaml") // as the default
	if _, err := d.parse(fs, nil); err != nil {
		t.Errorf("a missing default file: %v", err)
	}
	*d.logFormat = "xml"
	if _, err := d.logger(); err == nil || !strings.Contains(err.Error(), "--log-format") {
		t.Errorf("--log-format xml: %v", err)
	}
}
