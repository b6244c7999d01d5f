-- Streamlit's static files, gzipped at level 9 at build time, served from HAProxy's memory.
--
-- deploy/haproxy.cfg loads this file. At start it reads the folder named by ATTNVIZ_STATIC_GZ,
-- written by `python -m attnviz.deploy.precompress` (scripts/precompress-static) from the same
-- Streamlit the replicas run: manifest.tsv lists `<path>\t<content type>`, and <path>.gz holds
-- the file's bytes, gzipped. Absent or empty variable, or no manifest: nothing is held, and
-- every request goes to the replicas as before.
--
-- Registered:
--   fetch   lua.attnviz_static_has  true when the request's path is a held file
--   service lua.attnviz_static      answers such a path: 200, the gzipped bytes, the replica's
--                                   content type, and Streamlit's own immutable cache-control
-- The config uses the service only for a GET of a held path whose Accept-Encoding names gzip.
-- A path not held (another Streamlit's fingerprint, a made-up one) is not touched here.

local IMMUTABLE = "public, immutable, max-age=31536000" -- what Streamlit sends for /static/

local held = {} -- URL path ("/static/js/...") -> { body = gzip bytes, content_type = string }

local function read_file(path)
    local file = io.open(path, "rb")
    if not file then
        return nil
    end
    local data = file:read("a")
    file:close()
    return data
end

local function load_folder(folder)
    local manifest = io.open(folder .. "/manifest.tsv", "r")
    if not manifest then
        core.Warning("attnviz static: no " .. folder .. "/manifest.tsv;"
            .. " every file goes to the replicas")
        return
    end
    local count, bytes, missing = 0, 0, 0
    for line in manifest:lines() do
        local path, content_type = line:match("^([^#\t][^\t]*)\t([^\t]+)$")
        if path then
            local body = read_file(folder .. "/" .. path .. ".gz")
            if body then
                held["/" .. path] = { body = body, content_type = content_type }
                count, bytes = count + 1, bytes + #body
            else
                missing = missing + 1
            end
        end
    end
    manifest:close()
    core.Info(string.format("attnviz static: %d gzipped files (%.2f MB) held from %s%s",
        count, bytes / 1e6, folder,
        missing > 0 and string.format("; %d listed files missing, left to the replicas", missing)
            or ""))
end

local folder = os.getenv("ATTNVIZ_STATIC_GZ")
if folder and folder ~= "" then
    load_folder(folder)
end

core.register_fetches("attnviz_static_has", function(txn)
    return held[txn.sf:path()] ~= nil
end)

core.register_service("attnviz_static", "http", function(applet)
    local file = held[applet.path]
    if not file then -- the config checks first; answer plainly if it ever does not
        applet:set_status(404)
        applet:add_header("content-length", "0")
        applet:start_response()
        return
    end
    applet:set_status(200)
    applet:add_header("content-type", file.content_type)
    applet:add_header("content-encoding", "gzip")
    applet:add_header("vary", "Accept-Encoding")
    applet:add_header("cache-control", IMMUTABLE)
    applet:add_header("content-length", tostring(#file.body))
    applet:start_response()
    applet:send(file.body)
end)
