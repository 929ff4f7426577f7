// Package frameworks puts one librate.Middleware in front of the same route, GET
// /hello, in each of net/http, chi, gin and echo: the lines each framework needs, which
// docs/go.md shows and the tests here serve. It is a module of its own, so that the
// frameworks are no dependency of librate's.
package frameworks

import (
	"io"
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/go-chi/chi/v5"
	"github.com/labstack/echo/v4"

	librate "github.com/librate/librate/bindings/go"
)

// hello answers "hello".
func hello(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "hello\n") }

// NetHTTP is net/http's ServeMux behind m: Wrap takes and returns an http.Handler.
func NetHTTP(m *librate.Middleware) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /hello", hello)
	return m.Wrap(mux)
}

// Chi is a chi router behind m: Wrap is a chi middleware as it is.
func Chi(m *librate.Middleware) http.Handler {
	r := chi.NewRouter()
	r.Use(m.Wrap)
	r.Get("/hello", hello)
	return r
}

// Gin is a gin engine behind m: Admit decides the request and writes the answer, and
// a refused request stops the chain.
func Gin(m *librate.Middleware) http.Handler {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.Use(func(c *gin.Context) {
		if !m.Admit(c.Writer, c.Request) {
			c.Abort()
		}
	})
	r.GET("/hello", gin.WrapF(hello))
	return r
}

// Echo is an echo server behind m: echo.WrapMiddleware adapts Wrap.
func Echo(m *librate.Middleware) http.Handler {
	e := echo.New()
	e.Use(echo.WrapMiddleware(m.Wrap))
	e.GET("/hello", echo.WrapHandler(http.HandlerFunc(hello)))
	return e
}
