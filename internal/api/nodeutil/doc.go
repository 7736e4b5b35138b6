// Package nodeutil holds the questions components ask of a Node's status,
// answered one way for all of them.
package nodeutil
