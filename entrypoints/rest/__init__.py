"""The REST door (`memory serve`): the Litestar app, its routes and the web page at /ui."""
