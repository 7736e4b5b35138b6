package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"plainkube.dev/plainkube/internal/server"
)

// systemdUnitDir is where 'plainkube install' writes its units.
const systemdUnitDir = "/etc/systemd/system"

// unitNames are the systemd units of 'plainkube install server|agent', as
// k3s's k3s.service and k3s-agent.service.
var unitNames = map[string]string{"server": "plainkube.service", "agent": "plainkube-agent.service"}

// systemdUnit is the unit that runs 'plainkube ROLE ARGS…' at boot. The
// node agent's containers are in their own shims' cgroups under the
// unit's: KillMode=process stops plainkube alone on a restart, so pods
// keep running, and Delegate=yes lets it manage those cgroups; the limits
// are those a node with many pods needs.
func systemdUnit(binary, role string, args []string) string {
	quoted := make([]string, 0, len(args)+2)
	for _, a := range append([]string{binary, role}, args...) {
		quoted = append(quoted, systemdQuote(a))
	}
	return fmt.Sprintf(`[Unit]
Description=plainkube %s (Kubernetes, implemented plainly)
Documentation=https://plainkube.dev
Wants=network-online.target
After=network-online.target

[Service]
Type=exec
ExecStart=%s
KillMode=process
Delegate=yes
LimitNOFILE=1048576
LimitNPROC=infinity
LimitCORE=infinity
TasksMax=infinity
TimeoutStartSec=0
Restart=always
RestartSec=5s

[Install]
WantedBy=multi-user.target
`, role, strings.Join(quoted, " "))
}

// systemdQuote quotes a word of ExecStart when it needs it (systemd takes
// C-style escapes in double quotes; a bare % or $ would be expanded).
func systemdQuote(s string) string {
	s = strings.ReplaceAll(s, "%", "%%")
	s = strings.ReplaceAll(s, "$", "$$")
	if s != "" && !strings.ContainsAny(s, " \t\"'\\;") {
		return s
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// systemdRunning reports whether systemd is this machine's init.
func systemdRunning() bool {
	_, err := os.Stat("/run/systemd/system")
	return err == nil
}

// runInstall writes and enables the unit that runs 'plainkube server' or
// 'plainkube agent' with the flags given, checked first by the command
// itself (--print-config). Where systemd does not run it prints the unit
// and says so.
func runInstall(args []string, stdout, stderr io.Writer) error {
	const usage = "usage: plainkube install server|agent [--unit-dir DIR] [--print] [FLAGS OF THE COMMAND...]"
	if len(args) < 1 || unitNames[args[0]] == "" {
		return errors.New(usage)
	}
	role := args[0]
	// install's own flags; every other argument is the service's.
	unitDir, printOnly := systemdUnitDir, false
	var serviceArgs []string
	rest := args[1:]
	for i := 0; i < len(rest); i++ {
		switch a := rest[i]; {
		case a == "--":
			serviceArgs = append(serviceArgs, rest[i+1:]...)
			i = len(rest)
		case a == "--print" || a == "-print":
			printOnly = true
		case a == "--unit-dir" || a == "-unit-dir":
			if i+1 == len(rest) {
				return errors.New("--unit-dir needs a directory\n" + usage)
			}
			i++
			unitDir = rest[i]
		case strings.HasPrefix(a, "--unit-dir="):
			unitDir = strings.TrimPrefix(a, "--unit-dir=")
		default:
			serviceArgs = append(serviceArgs, a)
		}
	}
	binary, err := os.Executable()
	if err == nil {
		binary, err = filepath.EvalSymlinks(binary)
	}
	if err != nil {
		return fmt.Errorf("finding this binary: %w", err)
	}
	// The service's flags are checked as the service will read them
	// (with /etc/plainkube/config.yaml): a typo fails here, not at boot.
	check := exec.Command(binary, append(append([]string{role}, serviceArgs...), "--print-config")...)
	if out, err := check.CombinedOutput(); err != nil {
		return fmt.Errorf("plainkube %s %s: %v\n%s", role, strings.Join(serviceArgs, " "), err, out)
	}
	unit := systemdUnit(binary, role, serviceArgs)
	if printOnly {
		_, err := io.WriteString(stdout, unit)
		return err
	}
	if !systemdRunning() {
		io.WriteString(stdout, unit)
		return fmt.Errorf("systemd is not running on this machine (no /run/systemd/system): nothing installed; the unit is above, for %s/%s where systemd runs",
			systemdUnitDir, unitNames[role])
	}
	path := filepath.Join(unitDir, unitNames[role])
	if err := os.WriteFile(path, []byte(unit), 0o644); err != nil {
		return err
	}
	fmt.Fprintln(stderr, "wrote", path)
	for _, cmd := range [][]string{{"daemon-reload"}, {"enable", "--now", unitNames[role]}} {
		if out, err := exec.Command("systemctl", cmd...).CombinedOutput(); err != nil {
			return fmt.Errorf("systemctl %s: %v\n%s", strings.Join(cmd, " "), err, out)
		}
	}
	fmt.Fprintf(stderr, "%s is enabled and started: systemctl status %s; journalctl -u %s\n", unitNames[role], unitNames[role], unitNames[role])
	return nil
}

// runUninstall stops and removes the units 'plainkube install' made, then
// removes what the node left on the host (as 'plainkube cleanup') and the
// data directories.
func runUninstall(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("uninstall", flag.ContinueOnError)
	fs.SetOutput(stderr)
	unitDir := fs.String("unit-dir", systemdUnitDir, "where the unit files are")
	dataDir := fs.String("data-dir", server.DefaultDataDir(), "the server's data directory (the agent's is its agent/ subdirectory by default)")
	keepData := fs.Bool("keep-data", false, "keep the data directory (certificates, etcd, images)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return errors.New("uninstall needs root")
	}
	for _, name := range []string{unitNames["agent"], unitNames["server"]} {
		path := filepath.Join(*unitDir, name)
		if _, err := os.Stat(path); err != nil {
			continue
		}
		if systemdRunning() {
			if out, err := exec.Command("systemctl", "disable", "--now", name).CombinedOutput(); err != nil {
				return fmt.Errorf("systemctl disable --now %s: %v\n%s", name, err, out)
			}
		}
		if err := os.Remove(path); err != nil {
			return err
		}
		fmt.Fprintln(stderr, "removed", path)
	}
	if systemdRunning() {
		exec.Command("systemctl", "daemon-reload").Run()
	}
	// What the server's node and a joined agent left: their pods, rules,
	// bridges and mounts.
	for _, dir := range []string{*dataDir, filepath.Join(*dataDir, "agent")} {
		if _, err := os.Stat(filepath.Join(dir, "node")); err != nil {
			continue
		}
		if err := runCleanup([]string{"--data-dir", dir}); err != nil {
			return fmt.Errorf("cleanup of %s: %w", dir, err)
		}
	}
	if !*keepData {
		if err := os.RemoveAll(*dataDir); err != nil {
			return err
		}
		fmt.Fprintln(stderr, "removed", *dataDir)
	}
	return nil
}
