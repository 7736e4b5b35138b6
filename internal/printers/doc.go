// Package printers holds the server-side tables of `kubectl get`: for each
// built-in kind, the columns kube-apiserver reports in a meta.k8s.io Table and
// a function that computes one row's cells from a typed object of k8s.io/api.
//
// It is pure: no I/O, no goroutines. Ages ("5m", "2d3h") are measured against
// the package clock, which tests replace. The API server drives it through
// registry.TableSpec: a resource's Strategy.Table is For(its kind), or
// Default() for kinds upstream prints without a dedicated printer
// (custom resources, Roles, LimitRanges, ...).
//
// The tables follow upstream kube-apiserver: the same column names, types,
// priorities and order, and cells formatted the same way (`<none>`,
// `<unknown>`, "80:30080/TCP", pod STATUS reasons such as "Init:0/1" or
// "CrashLoopBackOff", RESTARTS such as "3 (5m ago)"). As upstream's server does
// (it always generates the wide form), every column is sent, those with
// Priority 1 being shown by kubectl only with -o wide.
//
// The first column is NAME with Format "name" for every kind except Event,
// whose table upstream leads with LAST SEEN and carries NAME as its last,
// wide-only column.
package printers
