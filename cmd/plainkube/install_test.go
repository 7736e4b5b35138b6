package main

import (
	"strings"
	"testing"
)

// TestSystemdUnit: the unit runs the command with its flags, each word
// quoted as systemd reads ExecStart, stops plainkube alone (pods keep
// running) and lets it manage its containers' cgroups.
func TestSystemdUnit(t *testing.T) {
	unit := systemdUnit("/usr/local/bin/plainkube", "agent", []string{"--server", "https://10.0.0.1:6443", "--data-dir", "/var/lib/a b", "--node-name", `x"%$y`})
	for _, want := range []string{
		`ExecStart=/usr/local/bin/plainkube agent --server https://10.0.0.1:6443 --data-dir "/var/lib/a b" --node-name "x\"%%$$y"` + "\n",
		"KillMode=process\n", "Delegate=yes\n", "Restart=always\n", "LimitNOFILE=1048576\n", "WantedBy=multi-user.target\n",
		"Description=plainkube agent",
	} {
		if !strings.Contains(unit, want) {
			t.Errorf("unit lacks %q:\n%s", want, unit)
		}
	}
	if err := runInstall([]string{"neither"}, &strings.Builder{}, &strings.Builder{}); err == nil || !strings.Contains(err.Error(), "usage") {
		t.Errorf("install of an unknown role: %v", err)
	}
}
