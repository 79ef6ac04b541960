package caddyglue

import (
	"context"
	"fmt"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyevents"
)

// WhenStarted runs start once the configuration of ctx has started, never
// for one that is only validated: Provision runs for `gamegate validate`
// (and `caddy adapt --validate`, and POST /load before a configuration
// takes over) as it runs for a configuration that serves, and work that
// touches the network (health checks, polling a shared store, sampling
// game servers) must not begin there. Caddy emits its "started" event
// after every app of a configuration has started; Cleanup still ends the
// work, which must cope with never having started.
func WhenStarted(ctx caddy.Context, start func()) error {
	app, err := ctx.App("events")
	if err != nil {
		return fmt.Errorf("getting the events app: %w", err)
	}
	return app.(*caddyevents.App).On("started", startedHandler(start))
}

// startedHandler is a Caddy event handler that calls itself, ignoring
// the event.
type startedHandler func()

func (h startedHandler) Handle(context.Context, caddy.Event) error {
	h()
	return nil
}
