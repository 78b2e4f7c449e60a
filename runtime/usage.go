package runtime

import (
	"context"
	"fmt"
	"time"

	"github.com/subako/subako/models"
)

// Prices on Subako Cloud, in SC (Subako credits), from the product spec.
const (
	PriceFunctionSecond = 0.01       // per second a function call runs
	PriceMachineSecond  = 0.02777778 // per second a sandbox machine runs
)

// Usage kinds.
const (
	UsageFunctionSeconds = "function_seconds"
	UsageMachineSeconds  = "machine_seconds"
	UsageArchiveBytes    = "archive_bytes"
)

// Usage is one metered use, for the usage page and billing.
type Usage struct {
	Kind      string
	SessionID string
	AgentID   string
	Subject   string // the call, sandbox or archive it measures
	Quantity  float64
	Unit      string
	Credits   float64
	Start     time.Time
	End       time.Time
}

// RecordUsage stores one metered use. It is not a verb: the runtime meters
// what it ran, on nobody's request.
func (r *Runtime) RecordUsage(ctx context.Context, u Usage) error {
	rec := models.UsageRecord{ID: newID("use"), Kind: u.Kind, SessionID: u.SessionID, AgentID: u.AgentID, Subject: u.Subject,
		Quantity: u.Quantity, Unit: u.Unit, Credits: u.Credits, StartedAt: u.Start.UTC(), EndedAt: u.End.UTC()}
	if err := r.db.WithContext(ctx).Create(&rec).Error; err != nil {
		return fmt.Errorf("runtime: record usage: %w", err)
	}
	return nil
}
