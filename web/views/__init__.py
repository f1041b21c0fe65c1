"""The account holders' pages (docs/web.md), a module per part of the site. Each view checks
its form, calls one service or selector of the app that owns the data, and renders; a domain
error becomes a message on the page, and another person's object is a 404, exactly like one
that does not exist."""
