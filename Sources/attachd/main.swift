// attachd: serve, process, inspect, keys. Wired up in App.
print("attachd")
