// Package tenant names the unit of isolation: every organization is a tenant,
// and every tenant-scoped record carries its tenant id.
package tenant

import "time"

// DefaultID is the id of the tenant that exists from the first start. Open dev
// mode and the bootstrap token act in it.
const DefaultID = "default"

// DefaultName is the display name of the default tenant.
const DefaultName = "Default"

// Tenant is an organization.
type Tenant struct {
	ID        string    `json:"tenantId"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"createdAt"`
}
