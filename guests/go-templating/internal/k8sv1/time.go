// Package v1 holds the two Kubernetes API types getResourceCondition and
// ClaimConditions expose: a template sees them by these names (printf "%T",
// JSON decoding errors), as it does with upstream's k8s.io/api and
// k8s.io/apimachinery types, without linking either.
package v1

import (
	"encoding/json"
	"time"
)

// ConditionStatus is a condition's status: True, False or Unknown.
type ConditionStatus string

// The statuses a condition may have.
const (
	ConditionTrue    ConditionStatus = "True"
	ConditionFalse   ConditionStatus = "False"
	ConditionUnknown ConditionStatus = "Unknown"
)

// Time is a time.Time that marshals to JSON as RFC 3339 (null when zero),
// like metav1.Time, whose method set it keeps.
type Time struct {
	time.Time
}

// IsZero reports whether t is nil or the zero time.
func (t *Time) IsZero() bool {
	return t == nil || t.Time.IsZero()
}

// Before reports whether t is before u.
func (t *Time) Before(u *Time) bool {
	if t != nil && u != nil {
		return t.Time.Before(u.Time)
	}
	return false
}

// Equal reports whether t and u are the same instant.
func (t *Time) Equal(u *Time) bool {
	if t == nil && u == nil {
		return true
	}
	if t != nil && u != nil {
		return t.Time.Equal(u.Time)
	}
	return false
}

// Rfc3339Copy returns t truncated to what RFC 3339 keeps.
func (t Time) Rfc3339Copy() Time {
	copied, _ := time.Parse(time.RFC3339, t.Format(time.RFC3339))
	return Time{copied}
}

// UnmarshalJSON reads null or an RFC 3339 string.
func (t *Time) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		t.Time = time.Time{}
		return nil
	}
	var text string
	if err := json.Unmarshal(b, &text); err != nil {
		return err
	}
	parsed, err := time.Parse(time.RFC3339, text)
	if err != nil {
		return err
	}
	t.Time = parsed.Local()
	return nil
}

// UnmarshalQueryParameter reads an RFC 3339 string ("" or "null" is zero).
func (t *Time) UnmarshalQueryParameter(text string) error {
	if text == "" || text == "null" {
		t.Time = time.Time{}
		return nil
	}
	parsed, err := time.Parse(time.RFC3339, text)
	if err != nil {
		return err
	}
	t.Time = parsed.Local()
	return nil
}

// MarshalJSON writes null for the zero time, else the UTC time in RFC 3339.
func (t Time) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("null"), nil
	}
	out := append(make([]byte, 0, len(time.RFC3339)+2), '"')
	out = t.UTC().AppendFormat(out, time.RFC3339)
	return append(out, '"'), nil
}

// ToUnstructured is the value the time has in an unstructured object.
func (t Time) ToUnstructured() interface{} {
	if t.IsZero() {
		return nil
	}
	return string(t.UTC().AppendFormat(make([]byte, 0, len(time.RFC3339)), time.RFC3339))
}

// MarshalQueryParameter writes "" for the zero time, else RFC 3339.
func (t Time) MarshalQueryParameter() (string, error) {
	if t.IsZero() {
		return "", nil
	}
	return t.UTC().Format(time.RFC3339), nil
}
