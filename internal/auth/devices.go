package auth

import (
	"context"
	"encoding/hex"
	"net/http"
	"time"
)

// Device cookies keep an account's owner able to sign in while someone
// else guesses at its password (OWASP's "Slow Down Online Guessing Attacks
// with Device Cookies"). A browser that signs in to an account gets a
// cookie naming it a device of that account; its later sign-ins to the
// account draw from a bucket of their own, and only sign-ins without one
// share the account's bucket, the one that guesses empty.

// DeviceCookie names the cookie; it is sent to the sign-in endpoint only.
const DeviceCookie = "svc_device"

const deviceCookiePath = "/api/v1/auth/login"

// DeviceLifetime is how long a device stays known after its last sign-in.
const DeviceLifetime = 180 * 24 * time.Hour

// MaxDevices bounds the devices remembered per account; past it the least
// recently used are forgotten.
const MaxDevices = 20

// DeviceStore keeps device cookies by their sha256.
type DeviceStore interface {
	// DeviceOf reports whether hash is a device of the account whose
	// (normalized) email is email, used at or after since.
	DeviceOf(ctx context.Context, hash [32]byte, email string, since time.Time) (bool, error)
	// ReplaceDevice records next as a device of userID used at, in place
	// of old when old is one of userID's, and forgets userID's devices
	// past the keep most recently used.
	ReplaceDevice(ctx context.Context, old, next [32]byte, userID string, at time.Time, keep int) error
	// ExpireDevices forgets every device unused since before before, and
	// says how many.
	ExpireDevices(ctx context.Context, before time.Time) (int, error)
}

// Devices issues and recognizes device cookies. A nil *Devices knows no
// device and remembers none.
type Devices struct {
	store  DeviceStore
	secure bool // the cookie's Secure flag, as the session cookie's
	now    func() time.Time
}

// NewDevices returns Devices over store; now may be nil.
func NewDevices(store DeviceStore, secure bool, now func() time.Time) *Devices {
	if now == nil {
		now = time.Now
	}
	return &Devices{store: store, secure: secure, now: now}
}

// Bucket returns the rate-limit bucket of r's device when r presents the
// cookie of a device that signed in to the account of email (normalized)
// within DeviceLifetime, and "" otherwise.
func (d *Devices) Bucket(ctx context.Context, r *http.Request, email string) (string, error) {
	if d == nil {
		return "", nil
	}
	h, ok := cookieHash(r, DeviceCookie)
	if !ok {
		return "", nil
	}
	known, err := d.store.DeviceOf(ctx, h, email, d.now().Add(-DeviceLifetime))
	if err != nil || !known {
		return "", err
	}
	return "device:" + hex.EncodeToString(h[:]), nil
}

// Remember makes r's browser a device of userID, who has just signed in:
// it gets a new cookie, which replaces the one it presented. A new value at
// each sign-in means no one can plant a value they know and have it become
// a device of someone else's account.
func (d *Devices) Remember(ctx context.Context, w http.ResponseWriter, r *http.Request, userID string) error {
	if d == nil {
		return nil
	}
	old, _ := cookieHash(r, DeviceCookie)
	token, next, err := newCookieValue()
	if err != nil {
		return err
	}
	if err := d.store.ReplaceDevice(ctx, old, next, userID, d.now(), MaxDevices); err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{Name: DeviceCookie, Value: token, Path: deviceCookiePath,
		MaxAge: int(DeviceLifetime / time.Second), HttpOnly: true, Secure: d.secure, SameSite: http.SameSiteStrictMode})
	return nil
}

// Expire forgets the devices unused for DeviceLifetime, which Bucket no
// longer counts, and says how many. It belongs in a periodic sweep.
func (d *Devices) Expire(ctx context.Context) (int, error) {
	if d == nil {
		return 0, nil
	}
	return d.store.ExpireDevices(ctx, d.now().Add(-DeviceLifetime))
}
