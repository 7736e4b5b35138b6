// Package helmrelease is plainkube's Helm controller: a HelmRelease
// (helm.plainkube.dev/v1, a CustomResourceDefinition the controller
// installs at start) names a chart and its values, and the controller
// installs, upgrades and uninstalls that release with the Helm SDK
// (helm.sh/helm/v4 pkg/action, releases stored as helm stores them), so
// `helm list` and `helm history` show what it did.
//
// Each reconcile observes (the HelmRelease, its chart and values with
// their digest, helm's history of the release, the drift of its objects
// when asked to look), decides with plan (pure, table-tested: install,
// upgrade, unlock a release a crash left pending, reinstall a failed
// install, correct drift, uninstall, wait out a back-off), and applies
// that one step through the SDK, reporting it in status.conditions
// (Ready, Released, Failed, Drifted) and as Events.
package helmrelease
