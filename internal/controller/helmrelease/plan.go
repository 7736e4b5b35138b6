package helmrelease

import (
	"time"
)

// step is the one thing a reconcile does.
type step int

const (
	stepNone step = iota
	stepAddFinalizer
	// stepUninstall uninstalls the release of a HelmRelease being deleted,
	// then removes the finalizer.
	stepUninstall
	stepRemoveFinalizer
	stepInstall
	stepUpgrade
	// stepUnlock marks a release that was left pending-* (its helm process
	// ended mid-way: a crash) failed, so that it can be retried.
	stepUnlock
	// stepReinstall uninstalls a release that never deployed (a failed
	// install), then installs it again.
	stepReinstall
	stepCorrectDrift
)

var stepNames = map[step]string{stepNone: "none", stepAddFinalizer: "add finalizer", stepUninstall: "uninstall",
	stepRemoveFinalizer: "remove finalizer", stepInstall: "install", stepUpgrade: "upgrade", stepUnlock: "unlock",
	stepReinstall: "reinstall", stepCorrectDrift: "correct drift"}

func (s step) String() string { return stepNames[s] }

// Helm's release statuses the plan tells apart.
const (
	releaseDeployed    = "deployed"
	releaseFailed      = "failed"
	releaseUninstalled = "uninstalled"
)

func pending(status string) bool {
	return status == "pending-install" || status == "pending-upgrade" || status == "pending-rollback"
}

// releaseInfo is helm's newest revision of a release.
type releaseInfo struct {
	revision int
	status   string
	// ours: made by this controller for this HelmRelease (the owner label
	// holds its UID).
	ours bool
	// updated is when helm last wrote it.
	updated time.Time
}

// observed is what a reconcile saw.
type observed struct {
	deleting, hasFinalizer, suspend bool
	status                          Status
	// digest of the chart and values asked for; "" when they could not be
	// read (sourceErr).
	digest    string
	sourceErr error
	// last is helm's newest revision (nil: no release); deployed says some
	// revision in the history is deployed (so an upgrade can start from it).
	last     *releaseInfo
	deployed bool
	// drift lists the release's objects that differ from its manifest, as
	// far as looked (only a deployed, current release under a Report or
	// Correct policy is looked at).
	drift       []string
	driftPolicy string
	// timeout of the release's actions: a pending release not ours is
	// taken over once this has passed since helm last wrote it.
	timeout time.Duration
	now     time.Time
}

// plan is what to do next, and when to look again.
type plan struct {
	step         step
	requeueAfter time.Duration
}

// Resync is how often a release that is as it should be is looked at again
// (a changed chart on disk or in a repository, drift).
const Resync = 5 * time.Minute

// backoff is the wait after failures attempts in a row failed: 5 s,
// doubling, at most 5 minutes.
func backoff(failures int) time.Duration {
	if failures <= 0 {
		return 0
	}
	d := 5 * time.Second
	for i := 1; i < failures && d < 5*time.Minute; i++ {
		d *= 2
	}
	return min(d, 5*time.Minute)
}

// decide is the controller's plan for what it observed.
func decide(o observed) plan {
	if o.deleting {
		switch {
		case !o.hasFinalizer:
			return plan{}
		case o.last != nil && o.last.status != releaseUninstalled && !o.suspend:
			return plan{step: stepUninstall}
		default:
			return plan{step: stepRemoveFinalizer}
		}
	}
	if !o.hasFinalizer {
		return plan{step: stepAddFinalizer}
	}
	if o.suspend {
		return plan{}
	}
	// After a failure with the same chart and values, wait out the back-off.
	wait := time.Duration(0)
	if o.status.Failures > 0 && o.status.LastAttemptedAt != nil && (o.digest == "" || o.digest == o.status.LastAttemptedDigest) {
		wait = o.status.LastAttemptedAt.Add(backoff(o.status.Failures)).Sub(o.now)
	}
	if o.sourceErr != nil {
		return plan{requeueAfter: max(wait, time.Second)}
	}
	if o.last != nil && pending(o.last.status) {
		if !o.ours() {
			if left := o.last.updated.Add(o.timeout + time.Minute).Sub(o.now); left > 0 {
				return plan{requeueAfter: left}
			}
		}
		return plan{step: stepUnlock}
	}
	upToDate := o.upToDate()
	if !upToDate && wait > 0 {
		return plan{requeueAfter: wait}
	}
	switch {
	case o.last == nil:
		return plan{step: stepInstall}
	case !o.deployed || o.last.status == releaseUninstalled:
		return plan{step: stepReinstall}
	case !upToDate:
		return plan{step: stepUpgrade}
	case len(o.drift) > 0 && o.driftPolicy == DriftCorrect:
		return plan{step: stepCorrectDrift}
	}
	return plan{requeueAfter: Resync}
}

// upToDate: helm's newest revision is deployed, is the one last applied,
// and was made of the chart and values asked for now.
func (o observed) upToDate() bool {
	return o.last != nil && o.last.status == releaseDeployed &&
		o.digest == o.status.LastAppliedDigest && o.last.revision == o.status.LastAppliedRevision
}

func (o observed) ours() bool { return o.last != nil && o.last.ours }
