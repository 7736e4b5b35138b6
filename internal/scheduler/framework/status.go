package framework

import (
	"errors"
	"strings"
)

// Code is the outcome of running a plugin.
type Code int

const (
	// Success: the plugin ran and the pod is fine (a nil *Status is
	// Success too).
	Success Code = iota
	// Error: something went wrong inside the plugin; the pod is retried
	// with backoff.
	Error
	// Unschedulable: the pod does not fit now, but removing pods (by
	// preemption) may make it fit.
	Unschedulable
	// UnschedulableAndUnresolvable: the pod does not fit and preemption
	// cannot help (labels, taints, node name).
	UnschedulableAndUnresolvable
	// Skip: from PreFilter or PreScore, the plugin has nothing to do for
	// this pod, and its Filter or Score is not run.
	Skip
)

var codeNames = []string{"Success", "Error", "Unschedulable", "UnschedulableAndUnresolvable", "Skip"}

func (c Code) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return "Unknown"
}

// Status is a plugin's outcome: a code, human-readable reasons (each one is
// counted separately in a FitError message), the error behind an Error,
// and the name of the plugin that returned it.
type Status struct {
	code    Code
	reasons []string
	err     error
	plugin  string
}

// NewStatus returns a Status with the code and reasons.
func NewStatus(code Code, reasons ...string) *Status {
	return &Status{code: code, reasons: reasons}
}

// AsStatus wraps err in an Error status (nil for a nil error).
func AsStatus(err error) *Status {
	if err == nil {
		return nil
	}
	return &Status{code: Error, reasons: []string{err.Error()}, err: err}
}

// Code returns the code; Success for a nil Status.
func (s *Status) Code() Code {
	if s == nil {
		return Success
	}
	return s.code
}

// Reasons returns the reasons.
func (s *Status) Reasons() []string {
	if s == nil {
		return nil
	}
	return s.reasons
}

// Message joins the reasons with ", ".
func (s *Status) Message() string {
	if s == nil {
		return ""
	}
	return strings.Join(s.reasons, ", ")
}

// Plugin is the name of the plugin that returned the status.
func (s *Status) Plugin() string {
	if s == nil {
		return ""
	}
	return s.plugin
}

// WithPlugin records the plugin that returned s, and returns s.
func (s *Status) WithPlugin(name string) *Status {
	if s != nil {
		s.plugin = name
	}
	return s
}

// IsSuccess reports a nil or Success status.
func (s *Status) IsSuccess() bool { return s.Code() == Success }

// IsSkip reports a Skip status.
func (s *Status) IsSkip() bool { return s.Code() == Skip }

// IsRejected reports Unschedulable or UnschedulableAndUnresolvable.
func (s *Status) IsRejected() bool {
	c := s.Code()
	return c == Unschedulable || c == UnschedulableAndUnresolvable
}

// AsError returns the status as an error: nil for Success and Skip.
func (s *Status) AsError() error {
	if s.IsSuccess() || s.IsSkip() {
		return nil
	}
	if s.err != nil {
		return s.err
	}
	return errors.New(s.Message())
}

// Equal compares code, reasons and plugin (for tests).
func (s *Status) Equal(o *Status) bool {
	if s == nil || o == nil {
		return s.IsSuccess() && o.IsSuccess()
	}
	if s.code != o.code || s.plugin != o.plugin || len(s.reasons) != len(o.reasons) {
		return false
	}
	for i := range s.reasons {
		if s.reasons[i] != o.reasons[i] {
			return false
		}
	}
	return true
}

func (s *Status) String() string {
	if s == nil {
		return "Success"
	}
	out := s.code.String()
	if len(s.reasons) > 0 {
		out += ": " + s.Message()
	}
	if s.plugin != "" {
		out += " (" + s.plugin + ")"
	}
	return out
}
