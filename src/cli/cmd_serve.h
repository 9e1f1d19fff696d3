#pragma once

namespace CLI {
class App;
}

namespace edgeprobe::cli {

// `edgeprobe serve --db PATH|URL --listen HOST:PORT [--tokens FILE]`: the results hub
// (src/hub, docs/hub.md); --add-token NAME / --revoke-token NAME manage the token file.
void register_serve(CLI::App& app);
// `edgeprobe submit URL RUN|FILE`: posts a result document to a hub with a write token.
void register_submit(CLI::App& app);

}  // namespace edgeprobe::cli
