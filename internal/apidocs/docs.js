"use strict";
(function () {
  var spec = JSON.parse(document.getElementById("openapi").textContent);
  var METHODS = ["get", "post", "put", "patch", "delete"];
  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }
  // The markdown of descriptions: `code` and paragraphs.
  function md(s) {
    if (!s) return "";
    return esc(s).split(/\n\n+/).map(function (p) {
      return "<p>" + p.replace(/`([^`]+)`/g, "<code>$1</code>") + "</p>";
    }).join("");
  }
  function refName(ref) { return ref.split("/").pop(); }
  function resolve(x) {
    while (x && x.$ref) {
      var parts = x.$ref.replace(/^#\//, "").split("/"), v = spec;
      parts.forEach(function (p) { v = v[p]; });
      x = v;
    }
    return x;
  }
  function typeOf(s) {
    if (!s) return "";
    if (s.$ref) return '<a href="#schema-' + refName(s.$ref) + '">' + esc(refName(s.$ref)) + "</a>";
    if (s.type === "array") return typeOf(s.items) + "[]";
    if (s.type === "object" && s.additionalProperties && typeof s.additionalProperties === "object")
      return "map&lt;string, " + typeOf(s.additionalProperties) + "&gt;";
    var t = Array.isArray(s.type) ? s.type.join(" | ") : (s.type || "any");
    return esc(t + (s.format ? " (" + s.format + ")" : ""));
  }
  function limits(s) {
    s = s || {};
    var out = [];
    function add(label, v) { if (v !== undefined) out.push(label + " <code>" + esc(JSON.stringify(v)) + "</code>"); }
    add("default", s["default"]);
    add("const", s["const"]);
    if (s["enum"]) out.push("one of " + s["enum"].map(function (v) { return "<code>" + esc(v) + "</code>"; }).join(" "));
    add("min", s.minimum); add("max", s.maximum);
    add("min length", s.minLength); add("max length", s.maxLength);
    add("max items", s.maxItems);
    if (s.uniqueItems) out.push("unique");
    if (s.pattern !== undefined) out.push("pattern <code>" + esc(s.pattern) + "</code>");
    if (s.type === "array" && s.items) {
      var it = resolve(s.items);
      if (it && it !== s.items) { /* a named schema: its own limits are in Schemas */ }
      else { var sub = limits(s.items); if (sub) out.push("items: " + sub); }
    }
    return out.join(", ");
  }
  function fields(schema) {
    var s = resolve(schema);
    if (!s || s.type !== "object" || !s.properties) {
      return '<p>' + typeOf(schema) + (limits(s) ? ' <span class="lim">' + limits(s) + "</span>" : "") + "</p>";
    }
    var req = s.required || [];
    var rows = Object.keys(s.properties).map(function (name) {
      var p = s.properties[name], d = p.$ref ? resolve(p) : p;
      return "<tr><td class=\"name\">" + esc(name) + (req.indexOf(name) >= 0 ? '<span class="req">required</span>' : "") +
        '</td><td class="type">' + typeOf(p) + "</td><td>" + md(p.description || (p.$ref ? "" : "")) +
        '<span class="lim">' + limits(p.$ref ? d : p) + "</span></td></tr>";
    }).join("");
    var extra = s.additionalProperties === false ? '<p class="lim">No other fields.</p>' : "";
    return "<table><tr><th>field</th><th>type</th><th>meaning and limits</th></tr>" + rows + "</table>" + extra;
  }
  function authOf(op) {
    var sec = op.security || spec.security || [];
    if (!sec.length || sec.every(function (r) { return !Object.keys(r).length; })) return "no auth";
    return sec.map(function (r) {
      return Object.keys(r).map(function (k) {
        var sc = spec.components.securitySchemes[k];
        return sc.type === "http" ? "Bearer token" : sc.name;
      }).join(" + ");
    }).join(" or ");
  }
  function operations() {
    var ops = [];
    Object.keys(spec.paths).forEach(function (path) {
      var item = spec.paths[path];
      METHODS.forEach(function (m) {
        if (item[m]) ops.push({ path: path, method: m, op: item[m], params: (item.parameters || []).concat(item[m].parameters || []) });
      });
    });
    return ops;
  }
  // Who calls a route, from its security: a VM proves itself with an IMDS
  // token as well; a route of no auth is the service's own (health, this
  // description, the release table); every other is an operator's.
  var AUDIENCES = [
    { id: "operator", title: "Operator", about: "bearer token of an org" },
    { id: "vm", title: "VM", about: "IMDS token + the VM's bearer token" },
    { id: "service", title: "Service", about: "no auth" }
  ];
  function audienceOf(o) {
    var sec = o.op.security || spec.security || [];
    if (sec.some(function (r) { return Object.keys(r).some(function (k) { return spec.components.securitySchemes[k].type === "apiKey"; }); })) return "vm";
    if (!sec.length || sec.every(function (r) { return !Object.keys(r).length; })) return "service";
    return "operator";
  }
  function sidebar(ops) {
    var h = ['<nav id="sidebar"><a class="top" href="#">' + esc(spec.info.title) + "</a>"];
    AUDIENCES.forEach(function (a) {
      var mine = ops.filter(function (o) { return audienceOf(o) === a.id; });
      h.push('<h4 id="audience-' + a.id + '">' + esc(a.title) + " <small>" + mine.length + " · " + esc(a.about) + "</small></h4><ul>");
      mine.forEach(function (o) {
        h.push('<li><a href="#' + anchor(o) + '" title="' + esc(o.op.summary || "") + '"><span class="method ' + o.method + '">' + o.method.toUpperCase() +
          '</span><span class="path">' + esc(o.path).replace(/\//g, "/<wbr>") + "</span></a></li>");
      });
      h.push("</ul>");
    });
    h.push('<h4><a href="#auth">Authentication</a> · <a href="#schemas">Schemas</a></h4></nav>');
    return h.join("");
  }
  // An example answer, as the document gives it: JSON pretty-printed.
  function example(status, ct, ex) {
    var text = typeof ex === "string" ? ex : JSON.stringify(ex, null, 2);
    return '<details class="example" open><summary>Example ' + esc(status) + " <code>" + esc(ct) + "</code></summary><pre>" + esc(text) + "</pre></details>";
  }
  function anchor(o) { return "op-" + o.method + "-" + o.path.replace(/[^a-z0-9]+/gi, "-"); }
  function renderOp(o) {
    var op = o.op, h = [];
    h.push('<section class="op" id="' + anchor(o) + '"><header><span class="method ' + o.method + '">' + o.method.toUpperCase() +
      '</span><span class="path">' + esc(o.path) + '</span><span class="sum">' + esc(op.summary || "") +
      '</span><span class="auth">' + esc(authOf(op)) + "</span></header><div>");
    h.push(md(op.description));
    if (o.params.length) {
      h.push("<h3>Parameters</h3><table><tr><th>name</th><th>in</th><th>type</th><th>meaning and limits</th></tr>");
      o.params.forEach(function (p) {
        p = resolve(p);
        h.push('<tr><td class="name">' + esc(p.name) + (p.required ? '<span class="req">required</span>' : "") + "</td><td>" + esc(p["in"]) +
          '</td><td class="type">' + typeOf(p.schema) + "</td><td>" + md(p.description) + '<span class="lim">' + limits(resolve(p.schema)) + "</span></td></tr>");
      });
      h.push("</table>");
    }
    if (op.requestBody) {
      var rb = op.requestBody, ct = Object.keys(rb.content)[0];
      h.push("<h3>Request body</h3><p><code>" + esc(ct) + "</code>" + (rb["x-max-body-bytes"] ? ', at most ' + rb["x-max-body-bytes"] + " bytes" : "") + "</p>");
      h.push(fields(rb.content[ct].schema));
      if (rb.content[ct].example) h.push("<p>Example: <code>" + esc(JSON.stringify(rb.content[ct].example)) + "</code></p>");
    }
    var examples = [];
    h.push("<h3>Responses</h3><table><tr><th>status</th><th>body</th><th>meaning</th></tr>");
    Object.keys(op.responses).forEach(function (status) {
      var r = resolve(op.responses[status]), body = "";
      if (r.content) {
        var ct = Object.keys(r.content)[0];
        body = typeOf(r.content[ct].schema) + ' <span class="lim">' + esc(ct) + "</span>";
        if (status[0] === "2" && r.content[ct].example !== undefined) examples.push(example(status, ct, r.content[ct].example));
      } else if (status[0] === "2") {
        body = '<span class="lim">no body</span>';
      }
      var hdrs = Object.keys(r.headers || {}).filter(function (k) { return k !== "X-Request-Id"; });
      h.push('<tr><td class="status s' + status[0] + '">' + esc(status) + "</td><td class=\"type\">" + body + "</td><td>" + md(r.description) +
        (hdrs.length ? '<p class="lim">headers: ' + hdrs.map(function (k) { return "<code>" + esc(k) + "</code>"; }).join(" ") + "</p>" : "") + "</td></tr>");
    });
    h.push("</table>" + examples.join("") + "</div></section>");
    return h.join("");
  }
  var ops = operations(), out = [];
  out.push("<h1>" + esc(spec.info.title) + " <small>API " + esc(spec.info.version) + " · OpenAPI " + esc(spec.openapi) +
    ' · <a href="openapi.json">openapi.json</a></small></h1>');
  out.push(md(spec.info.description));
  out.push('<h2 id="auth">Authentication</h2><table><tr><th>scheme</th><th>how</th><th>meaning</th></tr>');
  Object.keys(spec.components.securitySchemes).forEach(function (k) {
    var s = spec.components.securitySchemes[k];
    var how = s.type === "http" ? "Authorization: Bearer &lt;token&gt;" : esc(s.name) + " (" + esc(s["in"]) + ")";
    out.push('<tr><td class="name">' + esc(k) + '</td><td class="name">' + how + "</td><td>" + md(s.description) + "</td></tr>");
  });
  out.push("</table>");
  (spec.tags || []).forEach(function (tag) {
    out.push('<h2 id="tag-' + esc(tag.name) + '">' + esc(tag.name) + "</h2>" + md(tag.description));
    ops.filter(function (o) { return (o.op.tags || [])[0] === tag.name; }).forEach(function (o) { out.push(renderOp(o)); });
  });
  out.push('<h2 id="schemas">Schemas</h2>');
  Object.keys(spec.components.schemas).forEach(function (name) {
    var s = spec.components.schemas[name];
    out.push('<section class="op" id="schema-' + esc(name) + '"><header><span class="path">' + esc(name) + "</span></header><div>" + md(s.description) + fields(s) + "</div></section>");
  });
  document.getElementById("root").innerHTML = out.join("");
  document.getElementById("root").insertAdjacentHTML("beforebegin", sidebar(ops));
  if (location.hash) { var t = document.getElementById(location.hash.slice(1)); if (t) t.scrollIntoView(); }
})();
