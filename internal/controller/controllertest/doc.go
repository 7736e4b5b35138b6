// Package controllertest runs one controller against a real in-process
// control plane (in-memory storage, no other controllers) for a test, and
// shares the small helpers such tests need. It imports internal/server,
// not the controller manager, so each controller's own tests can use it.
package controllertest
