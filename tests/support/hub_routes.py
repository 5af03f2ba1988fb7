"""Protocol routes of the loopback hub: Hugging Face API and resolve, ModelScope ``/api/v1``, control.

Response shapes follow ``docs/hubs.md``; the SDK tests in ``tests/testbed/test_hub_sdk.py`` hold them to what
huggingface_hub and modelscope actually parse.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict
from typing import Any
from urllib.parse import parse_qs, urlencode

from tests.support.hub_http import BaseHandler, iso_time
from tests.support.hub_store import DEFAULT_BRANCH, Commit, FileEntry

SETTINGS = ("tree_page_size", "ms_files_cap", "lfs_mode", "ms_linked_etag", "release_digests")


class Handler(BaseHandler):
    """Routes the hub origin (HF + ModelScope + releases) and hands the CDN origin to the base class."""

    def _route(self, control: bool) -> None:
        if control:
            self._control()
        elif self.server.origin == "cdn":
            self._cdn()
        else:
            self._hub_routes()

    def _hub_routes(self) -> None:
        s = self.segs
        if s[:2] == ["api", "v1"]:
            self._ms_routes(s[2:])
        elif s[:3] == ["api", "v3", "repos"] and len(s) >= 8 and s[5:7] == ["releases", "tags"]:
            self._gh_release(f"{s[3]}/{s[4]}", "/".join(s[7:]))
        elif s[:2] == ["api", "models"] and len(s) >= 4:
            self._hf_api(f"{s[2]}/{s[3]}", s[4:])
        elif len(s) >= 5 and s[2] == "resolve":
            self._hf_resolve(f"{s[0]}/{s[1]}", s[3], "/".join(s[4:]))
        elif len(s) >= 6 and s[2:4] == ["releases", "download"]:
            self._release(f"{s[0]}/{s[1]}", s[4], "/".join(s[5:]))
        else:
            if self._claim(None):
                self._json(404, {"error": "Not Found"})

    def _control(self) -> None:
        s = self.segs[1:]
        hub = self.hub
        if s[:1] == ["faults"]:
            if self.method == "POST":
                spec = json.loads(self.body or b"{}")
                try:
                    handle = hub.inject(spec.pop("kind"), **spec)
                except (KeyError, TypeError, ValueError) as exc:
                    self._json(400, {"error": str(exc)})
                    return
                self._json(200, {"id": handle.id})
            elif self.method == "DELETE":
                if len(s) > 1:
                    hub.faults.remove(int(s[1]))
                else:
                    hub.clear_faults()
                self._json(200, {"ok": True})
            else:
                self._json(200, hub.faults.describe())
        elif s[:1] == ["log"]:
            if self.method == "DELETE":
                hub.clear_log()
                self._json(200, {"ok": True})
            else:  # a client that had its answer may ask before the hub logged it: wait for the others
                hub.wait_idle(besides=1)
                self._json(200, [asdict(r) for r in hub.log])
        elif s[:1] == ["settings"]:
            if self.method == "POST":
                for k, v in json.loads(self.body or b"{}").items():
                    if k not in SETTINGS:
                        self._json(400, {"error": f"unknown setting {k}"})
                        return
                    setattr(hub, k, v)
            self._json(200, {k: getattr(hub, k) for k in SETTINGS})
        else:
            self._json(404, {"error": "unknown control route"})

    # ---- Hugging Face -----------------------------------------------------------------------------
    def _hf_error(self, status: int, code: str, message: str, commit: str | None = None) -> None:
        headers: dict[str, str | int] = {"X-Error-Code": code, "X-Error-Message": message}
        if commit:
            headers["X-Repo-Commit"] = commit
        self._json(status, {"error": message}, headers)

    def _hf_commit(self, repo_id: str, rev: str) -> Commit | None:
        """Resolve or answer the HF error (401 RepoNotFound / 404 RevisionNotFound)."""
        store = self.hub.store
        if repo_id not in store.repos:
            self._hf_error(401, "RepoNotFound", f"Repository Not Found for url: {self.path}.")
            return None
        commit = store.resolve(repo_id, rev)
        if commit is None:
            self._hf_error(404, "RevisionNotFound", f"Invalid rev id: {rev}")
        return commit

    def _body_here(self, repo_id: str, rev: str, path: str) -> bool:
        """Whether the hub itself will send this file's bytes (not an error, not a redirect to the CDN)."""
        commit = self.hub.store.resolve(repo_id, rev)
        entry = commit.files.get(path) if commit else None
        return entry is not None and not (entry.lfs and self.hub.lfs_mode == "redirect")

    def _hf_resolve(self, repo_id: str, rev: str, path: str) -> None:
        store = self.hub.store
        if not self._claim(path, body=self._body_here(repo_id, rev, path)):
            return
        repo = store.repos.get(repo_id)
        if repo is not None and repo.gated and not self.headers.get("Authorization"):
            self._hf_error(403, "GatedRepo", f"Access to model {repo_id} is restricted.")
            return
        commit = self._hf_commit(repo_id, rev)
        if commit is None:
            return
        entry = commit.files.get(path)
        if entry is None:
            self._hf_error(404, "EntryNotFound", f"{path} does not exist on {rev}", commit.sha)
            return
        headers: dict[str, str | int] = {"Accept-Ranges": "bytes"}
        if "no_commit_header" not in self.faults:
            headers["X-Repo-Commit"] = commit.sha
        if entry.lfs:
            headers.update(
                {
                    "ETag": f'"{entry.sha256}"',
                    "X-Linked-Etag": f'"{entry.sha256}"',
                    "X-Linked-Size": entry.size,
                }
            )
            if self.hub.lfs_mode == "redirect":
                headers["Location"] = self.hub.cdn_url(entry.sha256, repo_id, path)
                self._send(302, headers)
                return
        else:
            headers["ETag"] = f'"{entry.git_sha1}"'
        self._serve_blob(entry.sha256, entry.size, headers, repo_id, path)

    def _hf_api(self, repo_id: str, rest: list[str]) -> None:
        if not self._claim(None):
            return
        q = self.query
        if self.method in ("GET", "HEAD") and (not rest or rest[0] == "revision"):
            rev = rest[1] if len(rest) > 1 else DEFAULT_BRANCH
            commit = self._hf_commit(repo_id, rev)
            if commit is not None:
                self._json(200, self._hf_model_info(repo_id, commit, q.get("blobs", "").lower() == "true"))
        elif self.method in ("GET", "HEAD") and len(rest) >= 2 and rest[0] == "tree":
            commit = self._hf_commit(repo_id, rest[1])
            if commit is not None:
                self._hf_tree(repo_id, commit, "/".join(rest[2:]))
        elif self.method == "POST" and len(rest) >= 2 and rest[0] == "paths-info":
            commit = self._hf_commit(repo_id, rest[1])
            if commit is not None:
                self._hf_paths_info(commit)
        elif self.method in ("GET", "HEAD") and rest == ["refs"]:
            repo = self.hub.store.repos.get(repo_id)
            if repo is None:
                self._hf_error(401, "RepoNotFound", "Repository Not Found")
                return

            def refs(kind: str, m: dict[str, str]) -> list[dict[str, str]]:
                return [{"name": k, "ref": f"refs/{kind}/{k}", "targetCommit": v} for k, v in m.items()]

            self._json(
                200,
                {"branches": refs("heads", repo.branches), "tags": refs("tags", repo.tags), "converts": []},
            )
        else:
            self._json(404, {"error": "Not Found"})

    def _hf_model_info(self, repo_id: str, commit: Commit, blobs: bool) -> dict[str, Any]:
        repo = self.hub.store.repos[repo_id]
        siblings = []
        for e in sorted(commit.files.values(), key=lambda e: e.path):
            sib: dict[str, Any] = {"rfilename": e.path}
            if blobs:
                sib.update({"size": e.size, "blobId": e.git_sha1})
                if e.lfs:
                    sib["lfs"] = {"sha256": e.sha256, "size": e.size, "pointerSize": e.pointer_size}
            siblings.append(sib)
        return {
            "_id": hashlib.sha1(repo_id.encode()).hexdigest()[:24],
            "id": repo_id,
            "modelId": repo_id,
            "author": repo_id.split("/")[0],
            "sha": commit.sha,
            "lastModified": iso_time(commit.created_at),
            "createdAt": iso_time(repo.created_at),
            "private": False,
            "gated": "auto" if repo.gated else False,
            "disabled": False,
            "downloads": 0,
            "likes": 0,
            "tags": [],
            "library_name": "gguf",
            "siblings": siblings,
            "spaces": [],
            "usedStorage": sum(e.size for e in commit.files.values()),
        }

    @staticmethod
    def _hf_entry(path: str, entry: FileEntry | None, commit: Commit, expand: bool) -> dict[str, Any]:
        if entry is None:
            return {
                "type": "directory",
                "oid": hashlib.sha1(f"tree {path}".encode()).hexdigest(),
                "size": 0,
                "path": path,
            }
        out: dict[str, Any] = {"type": "file", "oid": entry.git_sha1, "size": entry.size, "path": path}
        if entry.lfs:
            out["lfs"] = {"oid": entry.sha256, "size": entry.size, "pointerSize": entry.pointer_size}
        if expand:
            out["lastCommit"] = {"id": commit.sha, "title": "Upload", "date": iso_time(commit.created_at)}
        return out

    def _hf_tree(self, repo_id: str, commit: Commit, root: str) -> None:
        q = self.query
        recursive = q.get("recursive", "").lower() in ("true", "1")
        expand = q.get("expand", "").lower() in ("true", "1")
        try:
            items = self.hub.store.list_tree(commit, root, recursive=recursive)
        except KeyError:
            self._hf_error(404, "EntryNotFound", f"{root} does not exist", commit.sha)
            return
        page = max(1, int(self.hub.tree_page_size))
        start = int(q.get("cursor") or 0)
        chunk = items[start : start + page]
        headers: dict[str, str | int] = {}
        if start + page < len(items):
            nq = {k: v for k, v in q.items() if k != "cursor"}
            nq["cursor"] = str(start + page)
            headers["Link"] = f'<{self.hub.endpoint}{self.url_path}?{urlencode(nq)}>; rel="next"'
        self._json(200, [self._hf_entry(p, e, commit, expand) for p, e in chunk], headers)

    def _hf_paths_info(self, commit: Commit) -> None:
        ctype = self.headers.get("Content-Type", "")
        if "json" in ctype:
            spec = json.loads(self.body or b"{}")
            paths = spec.get("paths") or []
            expand = bool(spec.get("expand"))
        else:
            form = parse_qs(self.body.decode(), keep_blank_values=True)
            paths = form.get("paths", [])
            expand = form.get("expand", ["false"])[-1].lower() == "true"
        dirs = self.hub.store.directories(commit.files)
        out = []
        for p in paths:
            p = p.strip("/")
            if p in commit.files:
                out.append(self._hf_entry(p, commit.files[p], commit, expand))
            elif p in dirs:
                out.append(self._hf_entry(p, None, commit, expand))
        self._json(200, out)

    # ---- GitHub release API -----------------------------------------------------------------------
    def _gh_release(self, owner_repo: str, tag: str) -> None:
        """``GET /api/v3/repos/{owner}/{repo}/releases/tags/{tag}`` (GitHub REST "Get a release by tag name").

        Assets carry ``size`` and ``digest: "sha256:<hex>"`` as github.com states them for uploads since mid-2025;
        ``release_digests=False`` answers like an older release (no digest).
        """
        if not self._claim(None):
            return
        assets = self.hub.store.release_assets(owner_repo, tag) if self.method in ("GET", "HEAD") else []
        if not assets:
            self._json(404, {"message": "Not Found", "status": "404",
                             "documentation_url": "https://docs.github.com/rest/releases/releases"})
            return
        api = f"{self.hub.endpoint}/api/v3/repos/{owner_repo}"
        release_id = int(hashlib.sha1(f"{owner_repo}@{tag}".encode()).hexdigest()[:8], 16)
        items = []
        for a in assets:
            item: dict[str, Any] = {
                "url": f"{api}/releases/assets/{int(a.sha256[:8], 16)}",
                "id": int(a.sha256[:8], 16),
                "name": a.name,
                "label": "",
                "content_type": "application/octet-stream",
                "state": "uploaded",
                "size": a.size,
                "download_count": 0,
                "browser_download_url": self.hub.release_url(owner_repo, tag, a.name),
            }
            if self.hub.release_digests:
                item["digest"] = f"sha256:{a.sha256}"
            items.append(item)
        self._json(200, {
            "url": f"{api}/releases/{release_id}", "id": release_id, "tag_name": tag, "name": tag,
            "draft": False, "prerelease": False, "assets": items,
        })  # fmt: skip

    # ---- ModelScope -------------------------------------------------------------------------------
    def _ms_ok(self, data: Any) -> None:
        self._json(
            200,
            {
                "Code": 200,
                "Data": data,
                "Message": "success",
                "Success": True,
                "RequestId": hashlib.md5(os.urandom(8)).hexdigest(),
            },
        )

    def _ms_error(self, status: int, message: str) -> None:
        self._json(
            status,
            {
                "Code": status,
                "Message": message,
                "Success": False,
                "RequestId": hashlib.md5(os.urandom(8)).hexdigest(),
            },
        )

    def _ms_commit(self, repo_id: str, rev: str | None) -> Commit | None:
        store = self.hub.store
        if repo_id not in store.repos:
            self._ms_error(404, f"model {repo_id} not found")
            return None
        rev = rev or "master"
        commit = store.resolve(repo_id, DEFAULT_BRANCH if rev == "master" else rev)
        if commit is None:
            self._ms_error(404, f"revision {rev} not found in {repo_id}")
        return commit

    def _ms_routes(self, s: list[str]) -> None:
        if len(s) == 4 and s[0] == "models" and s[3] == "repo" and self.method in ("GET", "HEAD"):
            self._ms_download(f"{s[1]}/{s[2]}")
            return
        if not self._claim(None):
            return
        if len(s) < 3 or s[0] != "models" or self.method not in ("GET", "HEAD"):
            self._ms_error(404, f"no such API: {self.url_path}")
            return
        repo_id, rest = f"{s[1]}/{s[2]}", s[3:]
        store = self.hub.store
        repo = store.repos.get(repo_id)
        if repo is None:
            self._ms_error(404, f"model {repo_id} not found")
        elif not rest:
            main = repo.commits[repo.branches[DEFAULT_BRANCH]]
            self._ms_ok({
                "Id": int(hashlib.sha1(repo_id.encode()).hexdigest()[:8], 16),
                "Name": s[2], "Path": s[1], "ChineseName": s[2], "Description": "",
                "CreatedTime": int(repo.created_at), "LastUpdatedTime": int(main.created_at),
                "Downloads": 0, "Stars": 0, "Visibility": 5, "IsOnline": 1, "Tags": [],
            })  # fmt: skip
        elif rest == ["revisions"]:

            def item(name: str, sha: str) -> dict[str, Any]:
                c = repo.commits[sha]
                return {"Revision": name, "CommitId": sha, "CreatedAt": int(c.created_at),
                        "CreatedBy": "hub", "Message": ""}  # fmt: skip

            branches = [item("master" if b == DEFAULT_BRANCH else b, sha) for b, sha in repo.branches.items()]
            tags = [item(t, sha) for t, sha in repo.tags.items()]
            self._ms_ok({"RevisionMap": {"Branches": branches, "Tags": tags}})
        elif rest == ["repo", "files"]:
            commit = self._ms_commit(repo_id, self.query.get("Revision"))
            if commit is None:
                return
            recursive = self.query.get("Recursive", "false").lower() == "true"
            try:
                items = store.list_tree(commit, self.query.get("Root", ""), recursive=recursive)
            except KeyError:
                self._ms_error(404, "path not found")
                return
            files = [self._ms_entry(p, e, commit) for p, e in items[: max(0, int(self.hub.ms_files_cap))]]
            self._ms_ok({"Files": files, "IsVisual": 0})
        else:
            self._ms_error(404, f"no such API: {self.url_path}")

    @staticmethod
    def _ms_entry(path: str, entry: FileEntry | None, commit: Commit) -> dict[str, Any]:
        base = {
            "Name": path.rsplit("/", 1)[-1],
            "Path": path,
            "Revision": commit.sha,
            "CommitId": commit.sha,
            "CommittedDate": int(commit.created_at),
            "CommitMessage": "Upload",
            "CommitterName": "hub",
        }
        if entry is None:
            return {
                **base,
                "Type": "tree",
                "Size": 0,
                "Sha256": "",
                "IsLFS": False,
                "Mode": "40000",
                "Id": hashlib.sha1(f"tree {path}".encode()).hexdigest(),
            }
        return {
            **base,
            "Type": "blob",
            "Size": entry.size,
            "Sha256": entry.sha256,
            "IsLFS": entry.lfs,
            "Mode": "100644",
            "Id": entry.git_sha1,
        }

    def _ms_download(self, repo_id: str) -> None:
        path = self.query.get("FilePath", "").strip("/")
        rev = self.query.get("Revision") or "master"
        if not self._claim(path, body=self._body_here(repo_id, DEFAULT_BRANCH if rev == "master" else rev, path)):
            return
        commit = self._ms_commit(repo_id, self.query.get("Revision"))
        if commit is None:
            return
        entry = commit.files.get(path)
        if entry is None:
            self._ms_error(404, f"file {path} not found")
            return
        if entry.lfs and self.hub.lfs_mode == "redirect":
            self._send(302, {"Location": self.hub.cdn_url(entry.sha256, repo_id, path)})
            return
        headers: dict[str, str | int] = {"Accept-Ranges": "bytes", "ETag": f'"{entry.git_sha1}"'}
        if self.hub.ms_linked_etag:
            headers["X-Linked-ETag"] = f'"{entry.sha256}"'
        self._serve_blob(entry.sha256, entry.size, headers, repo_id, path)
