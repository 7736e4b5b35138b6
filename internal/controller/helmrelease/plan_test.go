package helmrelease

import (
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDecide(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(-d)); return &t }
	applied := Status{LastAppliedDigest: "d1", LastAppliedRevision: 2, LastAttemptedDigest: "d1"}
	deployed := &releaseInfo{revision: 2, status: releaseDeployed, ours: true}
	failed := Status{LastAppliedDigest: "d1", LastAppliedRevision: 2, LastAttemptedDigest: "d2", Failures: 2, LastAttemptedAt: ago(3 * time.Second)}
	for _, tt := range []struct {
		name string
		o    observed
		want plan
	}{
		{"new: finalizer first", observed{digest: "d1"}, plan{step: stepAddFinalizer}},
		{"no release: install", observed{hasFinalizer: true, digest: "d1"}, plan{step: stepInstall}},
		{"suspended: nothing", observed{hasFinalizer: true, suspend: true, digest: "d2", last: deployed, deployed: true, status: applied}, plan{}},
		{"as applied: look again later", observed{hasFinalizer: true, digest: "d1", last: deployed, deployed: true, status: applied}, plan{requeueAfter: Resync}},
		{"values changed: upgrade", observed{hasFinalizer: true, digest: "d2", last: deployed, deployed: true, status: applied}, plan{step: stepUpgrade}},
		{"someone else upgraded: upgrade back", observed{hasFinalizer: true, digest: "d1", last: &releaseInfo{revision: 3, status: releaseDeployed}, deployed: true, status: applied}, plan{step: stepUpgrade}},
		{"chart unreadable: look again", observed{hasFinalizer: true, sourceErr: errors.New("no key"), last: deployed, deployed: true, status: applied}, plan{requeueAfter: time.Second}},
		{"failed upgrade, same digest: back-off", observed{hasFinalizer: true, digest: "d2", last: &releaseInfo{revision: 3, status: releaseFailed, ours: true}, deployed: true, status: failed},
			plan{requeueAfter: 7 * time.Second}},
		{"failed upgrade, back-off over: upgrade", observed{hasFinalizer: true, digest: "d2", last: &releaseInfo{revision: 3, status: releaseFailed, ours: true}, deployed: true, status: failed, now: now.Add(10 * time.Second)},
			plan{step: stepUpgrade}},
		{"failed upgrade, new values: at once", observed{hasFinalizer: true, digest: "d3", last: &releaseInfo{revision: 3, status: releaseFailed, ours: true}, deployed: true, status: failed}, plan{step: stepUpgrade}},
		{"rolled back after a failure: back-off", observed{hasFinalizer: true, digest: "d2", last: &releaseInfo{revision: 4, status: releaseDeployed, ours: true}, deployed: true, status: failed},
			plan{requeueAfter: 7 * time.Second}},
		{"failed install: reinstall", observed{hasFinalizer: true, digest: "d1", last: &releaseInfo{revision: 1, status: releaseFailed, ours: true}}, plan{step: stepReinstall}},
		{"uninstalled with history kept: reinstall", observed{hasFinalizer: true, digest: "d1", last: &releaseInfo{revision: 2, status: releaseUninstalled}, deployed: false, status: applied}, plan{step: stepReinstall}},
		{"our release left pending by a crash: unlock", observed{hasFinalizer: true, digest: "d2", last: &releaseInfo{revision: 3, status: "pending-upgrade", ours: true, updated: now}, deployed: true, status: applied}, plan{step: stepUnlock}},
		{"someone's pending release: wait for its timeout", observed{hasFinalizer: true, digest: "d2", last: &releaseInfo{revision: 3, status: "pending-upgrade", updated: now.Add(-time.Minute)}, deployed: true, status: applied, timeout: 5 * time.Minute},
			plan{requeueAfter: 5 * time.Minute}},
		{"someone's pending release past its timeout: unlock", observed{hasFinalizer: true, digest: "d2", last: &releaseInfo{revision: 3, status: "pending-install", updated: now.Add(-7 * time.Minute)}, status: applied, timeout: 5 * time.Minute},
			plan{step: stepUnlock}},
		{"drift reported", observed{hasFinalizer: true, digest: "d1", last: deployed, deployed: true, status: applied, drift: []string{"Deployment/web"}, driftPolicy: DriftReport}, plan{requeueAfter: Resync}},
		{"drift corrected", observed{hasFinalizer: true, digest: "d1", last: deployed, deployed: true, status: applied, drift: []string{"Deployment/web"}, driftPolicy: DriftCorrect}, plan{step: stepCorrectDrift}},
		{"deleted: uninstall", observed{deleting: true, hasFinalizer: true, last: deployed}, plan{step: stepUninstall}},
		{"deleted, nothing installed: let go", observed{deleting: true, hasFinalizer: true}, plan{step: stepRemoveFinalizer}},
		{"deleted while suspended: let go, release stays", observed{deleting: true, hasFinalizer: true, suspend: true, last: deployed}, plan{step: stepRemoveFinalizer}},
		{"deleted, finalizer gone", observed{deleting: true, last: deployed}, plan{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.o.now.IsZero() {
				tt.o.now = now
			}
			if got := decide(tt.o); got != tt.want {
				t.Errorf("decide = {%s %s}, want {%s %s}", got.step, got.requeueAfter, tt.want.step, tt.want.requeueAfter)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	for failures, want := range map[int]time.Duration{0: 0, 1: 5 * time.Second, 2: 10 * time.Second, 4: 40 * time.Second, 7: 5 * time.Minute, 50: 5 * time.Minute} {
		if got := backoff(failures); got != want {
			t.Errorf("backoff(%d) = %s, want %s", failures, got, want)
		}
	}
}

func TestMergeValues(t *testing.T) {
	dst := map[string]any{"a": 1, "m": map[string]any{"x": 1, "y": 2}}
	mergeValues(dst, map[string]any{"b": 2, "m": map[string]any{"y": 3}})
	mergeValues(dst, map[string]any{"a": "over"})
	m := dst["m"].(map[string]any)
	if dst["a"] != "over" || dst["b"] != 2 || m["x"] != 1 || m["y"] != 3 {
		t.Errorf("merged: %v", dst)
	}
}
