package caddycommands

import (
	"fmt"
	"path"
	"reflect"
	"slices"
	"strings"

	"github.com/caddyserver/caddy/v2"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"
)

func init() {
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "modules",
		Short: "Lists the gamegate modules this binary has",
		Long: `
Lists the ID of every gamegate module compiled into this binary, one a line.
Caddy's list-modules lists every module; gamegate's IDs are not all named
after it (layer4.handlers.qos, http.handlers.game_query, caddy.storage.redis),
and a binary built in gamegate's checkout names no package for them, so
"list-modules | grep gamegate" finds only some.`,
		CobraFunc: func(cmd *cobra.Command) {
			cmd.RunE = caddycmd.WrapCommandFuncForCobra(func(caddycmd.Flags) (int, error) {
				for _, id := range ModuleIDs() {
					fmt.Println(id)
				}
				return 0, nil
			})
		},
	})
}

// commandsPackage names this package, whose path leads to gamegate's root.
type commandsPackage struct{}

// ModuleIDs returns the IDs of the registered modules whose Go type is
// gamegate's (in this Go module), sorted.
func ModuleIDs() []string {
	// This package is <root>/caddymodule/caddycommands.
	root := path.Dir(path.Dir(reflect.TypeFor[commandsPackage]().PkgPath()))
	var ids []string
	for _, id := range caddy.Modules() {
		m, err := caddy.GetModule(id)
		if err != nil {
			continue
		}
		t := reflect.TypeOf(m.New())
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if p := t.PkgPath(); p == root || strings.HasPrefix(p, root+"/") {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}
