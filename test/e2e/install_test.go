package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestInstallAndUninstall: 'plainkube install server FLAGS' checks the
// flags as the service will read them and writes a unit that runs them
// (here, where systemd may not run, it prints the unit and says so);
// 'plainkube uninstall' removes the unit and the data directory.
func TestInstallAndUninstall(t *testing.T) {
	run := func(args ...string) (string, string, error) {
		cmd := exec.Command(binary, args...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}
	self, err := filepath.EvalSymlinks(binary)
	if err != nil {
		t.Fatal(err)
	}
	unit, stderr, err := run("install", "server", "--print", "--port", "7443", "--data-dir", "/var/lib/plain kube")
	if err != nil {
		t.Fatalf("install --print: %v\n%s", err, stderr)
	}
	contains(t, unit, "ExecStart="+self+` server --port 7443 --data-dir "/var/lib/plain kube"`+"\n", "KillMode=process", "Delegate=yes", "[Install]")

	_, stderr, err = run("install", "server", "--print", "--port", "seven")
	if err == nil {
		t.Fatal("install accepted --port seven")
	}
	contains(t, stderr, "--port")

	if _, err := os.Stat("/run/systemd/system"); err != nil {
		out, stderr, err := run("install", "agent", "--server", "https://127.0.0.1:6443")
		if err == nil {
			t.Fatal("install without systemd succeeded")
		}
		contains(t, stderr, "systemd is not running", "nothing installed")
		contains(t, out, "ExecStart="+self+" agent --server https://127.0.0.1:6443\n")
	}

	if os.Geteuid() != 0 {
		t.Skip("uninstall needs root")
	}
	if _, err := os.Stat("/run/systemd/system"); err == nil {
		t.Skip("systemd runs here: uninstall would stop this machine's units")
	}
	units, data := t.TempDir(), filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(filepath.Join(units, "plainkube.service"), []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(data, "pki"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := run("uninstall", "--unit-dir", units, "--data-dir", data); err != nil {
		t.Fatalf("uninstall: %v\n%s", err, stderr)
	}
	for _, gone := range []string{filepath.Join(units, "plainkube.service"), data} {
		if _, err := os.Stat(gone); !os.IsNotExist(err) {
			t.Errorf("%s is still there after uninstall (%v)", gone, err)
		}
	}
}
