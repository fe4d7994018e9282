// App module. See DESIGN.md §3.
