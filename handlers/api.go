package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/tools"
)

// bindJSON decodes a request body strictly (decodeStrict): an unknown or
// repeated field, a wrong type, trailing data or text that cannot be stored
// is a 422 naming the field, never silently ignored or mended.
func bindJSON(c echo.Context, v any) error {
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return &runtime.Error{Kind: runtime.KindInvalid, Code: "body_unreadable", Title: "Invalid body", Detail: err.Error()}
	}
	return decodeStrict(body, v)
}

func jsonProblem(err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "body"
		}
		return &runtime.Error{Kind: runtime.KindInvalid, Code: "invalid_type", Title: "Invalid body", Field: field,
			Detail: fmt.Sprintf("%s must be %s, not %s", field, jsonType(te.Type), jsonValueName(te.Value))}
	case errors.As(err, &se):
		return &runtime.Error{Kind: runtime.KindInvalid, Code: "invalid_json", Title: "Invalid body",
			Detail: fmt.Sprintf("the body is not valid JSON (at byte %d): %v", se.Offset, err)}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		key := strings.TrimPrefix(err.Error(), "json: unknown field ")
		if k, err := strconv.Unquote(key); err == nil {
			key = k
		}
		// Named as a path, so even an empty or dotted key names a field.
		field := tools.JoinPath("", key)
		return &runtime.Error{Kind: runtime.KindInvalid, Code: "unknown_field", Title: "Invalid body", Field: field,
			Detail: fmt.Sprintf("unknown field %q", key)}
	}
	return &runtime.Error{Kind: runtime.KindInvalid, Code: "invalid_json", Title: "Invalid body", Detail: err.Error()}
}

// APIUserList is User.list.
func (h *Handlers) APIUserList(c echo.Context) error {
	out, err := h.RT.UserList(ctx(c), principal(c))
	return answer(c, http.StatusOK, out, err)
}

// APIUserInvite is User.invite: the answer carries the one-time link once.
func (h *Handlers) APIUserInvite(c echo.Context) error {
	var in struct {
		Email  string `json:"email"`
		Access string `json:"access"`
		Tenant string `json:"tenant"`
	}
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	inv, err := h.RT.UserInviteTenant(ctx(c), principal(c), in.Email, in.Access, in.Tenant)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, map[string]any{"invite": inv, "url": h.BaseURL + "/invite/" + inv.Token})
}

// APIUserUpdate is User.update.
func (h *Handlers) APIUserUpdate(c echo.Context) error {
	var in runtime.UserUpdateInput
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	in.User = c.Param("user")
	out, err := h.RT.UserUpdate(ctx(c), principal(c), in)
	return answer(c, http.StatusOK, out, err)
}

// APIUserRemove is User.remove.
func (h *Handlers) APIUserRemove(c echo.Context) error {
	return answerEmpty(c, h.RT.UserRemove(ctx(c), principal(c), c.Param("user")))
}

// APIUserRevokeInvite is User.revoke_invite.
func (h *Handlers) APIUserRevokeInvite(c echo.Context) error {
	_, err := h.RT.UserRevokeInvite(ctx(c), principal(c), c.Param("invite"))
	return answerEmpty(c, err)
}

// APITokenList is Token.list.
func (h *Handlers) APITokenList(c echo.Context) error {
	out, err := h.RT.TokenList(ctx(c), principal(c))
	return answer(c, http.StatusOK, out, err)
}

// APITokenCreate is Token.create.
func (h *Handlers) APITokenCreate(c echo.Context) error {
	var in runtime.TokenCreateInput
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	out, err := h.RT.TokenCreate(ctx(c), principal(c), in)
	return answer(c, http.StatusCreated, out, err)
}

// APITokenRevoke is Token.revoke.
func (h *Handlers) APITokenRevoke(c echo.Context) error {
	return answerEmpty(c, h.RT.TokenRevoke(ctx(c), principal(c), c.Param("token")))
}

// APIActionList is Action.list.
func (h *Handlers) APIActionList(c echo.Context) error {
	var f runtime.ActionFilter
	if err := (&echo.DefaultBinder{}).BindQueryParams(c, &f); err != nil {
		return &runtime.Error{Kind: runtime.KindInvalid, Code: "invalid_query", Title: "Invalid query", Detail: err.Error()}
	}
	pg, err := h.RT.ActionListPage(ctx(c), principal(c), f)
	return answerList(c, pg.Items, pg.PageLinks, err)
}

// APIAgentList is Agent.list.
func (h *Handlers) APIAgentList(c echo.Context) error {
	out, err := h.RT.AgentList(ctx(c), principal(c))
	return answer(c, http.StatusOK, out, err)
}

// APIAgentCreate is Agent.create.
func (h *Handlers) APIAgentCreate(c echo.Context) error {
	var in runtime.AgentInput
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	out, err := h.RT.AgentCreate(ctx(c), principal(c), in)
	return answer(c, http.StatusCreated, out, err)
}

// APIAgentGet is Agent.get.
func (h *Handlers) APIAgentGet(c echo.Context) error {
	out, err := h.RT.AgentGet(ctx(c), principal(c), c.Param("agent"))
	return answer(c, http.StatusOK, out, err)
}

// APIAgentUpdate is Agent.update.
func (h *Handlers) APIAgentUpdate(c echo.Context) error {
	var in runtime.AgentInput
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	in.Agent = c.Param("agent")
	out, err := h.RT.AgentUpdate(ctx(c), principal(c), in)
	return answer(c, http.StatusOK, out, err)
}

// APIAgentDelete is Agent.delete.
func (h *Handlers) APIAgentDelete(c echo.Context) error {
	return answerEmpty(c, h.RT.AgentDelete(ctx(c), principal(c), c.Param("agent")))
}

func answer(c echo.Context, status int, v any, err error) error {
	if err != nil {
		return err
	}
	return c.JSON(status, v)
}

func answerEmpty(c echo.Context, err error) error {
	if err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// jsonType names a Go type the way the JSON that fills it is written.
func jsonType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return jsonType(t.Elem())
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && t.Name() == "RawMessage" {
			return "a JSON value"
		}
		if e := jsonType(t.Elem()); strings.HasPrefix(e, "a") {
			return "an array of " + strings.TrimPrefix(strings.TrimPrefix(e, "a "), "an ") + "s"
		}
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a JSON value"
}

// jsonValueName is what json.UnmarshalTypeError.Value holds ("string",
// "number 1.5", "array", "object", "bool"), said in the same words.
func jsonValueName(v string) string {
	switch {
	case v == "string":
		return "a string"
	case v == "array" || v == "object":
		return "an " + v
	case v == "bool":
		return "true or false"
	case strings.HasPrefix(v, "number"):
		return "a " + v
	}
	return v
}
