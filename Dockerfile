# Build: the Swift toolchain image (Debian 12) + the -dev packages Scripts/install-deps lists.
FROM swift:6.3-bookworm AS build
WORKDIR /src
COPY Scripts/install-deps Scripts/install-deps
RUN ATTACHD_INSTALL_TEST_DEPS=0 Scripts/install-deps
COPY Package.swift ./
COPY Sources Sources
COPY Tests Tests
RUN swift build -c release --static-swift-stdlib --product attachd \
 && cp "$(swift build -c release --static-swift-stdlib --show-bin-path)/attachd" /attachd

# Runtime: only the shared libraries the binary links (Scripts/check-runtime-deps verifies
# this list against `ldd` of the release binary on every Scripts/test run).
FROM debian:bookworm-slim
# RUNTIME-PACKAGES-BEGIN
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libturbojpeg0 libjpeg62-turbo libheif1 libpng16-16 libwebp7 libwebpdemux2 libgif7 liblcms2-2 \
      libsqlite3-0 libpq5 libssl3 libcurl4 libavcodec59 libavutil57 libavformat59 libavfilter8 curl ca-certificates \
 && rm -rf /var/lib/apt/lists/*
# RUNTIME-PACKAGES-END
RUN useradd --uid 10001 --user-group --no-log-init --home-dir /var/lib/attachd --create-home --shell /usr/sbin/nologin attachd
COPY --from=build /attachd /usr/local/bin/attachd
COPY Config /etc/attachd
USER attachd
# The data directory: blobs and the SQLite index by default; with ATTACHD_STORAGE_BACKEND=s3 and
# ATTACHD_INDEX_BACKEND=postgres (docker-compose.yml) only this node's temporary files.
VOLUME ["/var/lib/attachd"]
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
  CMD curl -fsS http://127.0.0.1:8080/healthz || exit 1
ENTRYPOINT ["/usr/local/bin/attachd"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8080", "--data-dir", "/var/lib/attachd", "--config", "/etc/attachd/attachd.json"]
