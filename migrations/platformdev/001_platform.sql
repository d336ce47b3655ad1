-- DEV ONLY. Minimal stand-ins for tables that other Excloud services own in
-- production (the token service and computeapi). k8sapi reads them; in
-- production they already exist in the shared database and this set is never
-- applied. Locally the platform simulator writes them.

-- Principal (bearer) tokens: stored only as hex SHA-256 of the token.
CREATE TABLE principal_tokens (
    id          bigserial PRIMARY KEY,
    hash        text        NOT NULL UNIQUE,
    org_id      bigint      NOT NULL,
    scope       text        NOT NULL DEFAULT 'principal',
    description text        NOT NULL DEFAULT '',
    expires_at  timestamptz NOT NULL,
    revoked_at  timestamptz,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- IMDS session tokens: one per VM-side session, hex SHA-256 only.
CREATE TABLE imds_tokens (
    id         bigserial PRIMARY KEY,
    hash       text        NOT NULL UNIQUE,
    vm_id      bigint      NOT NULL,
    org_id     bigint      NOT NULL,
    expiry_at  timestamptz NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE subnets (
    id         bigint PRIMARY KEY,
    zone_id    bigint NOT NULL,
    cidr_ipv4  text   NOT NULL,
    cidr_ipv6  text   NOT NULL DEFAULT ''
);

CREATE TABLE vms (
    id                   bigserial PRIMARY KEY,
    org_id               bigint      NOT NULL,
    name                 text        NOT NULL,
    zone_id              bigint      NOT NULL,
    subnet_id            bigint      NOT NULL,
    image_id             bigint      NOT NULL,
    instance_type        text        NOT NULL,
    role                 text        NOT NULL DEFAULT '',
    userdata             text        NOT NULL DEFAULT '',
    allocate_public_ipv4 boolean     NOT NULL DEFAULT false,
    ssh_pubkey           text        NOT NULL DEFAULT '',
    root_volume_size_gib integer     NOT NULL DEFAULT 0,
    security_group_ids   bigint[]    NOT NULL DEFAULT '{}',
    state                text        NOT NULL DEFAULT 'running',
    created_at           timestamptz NOT NULL DEFAULT now(),
    deleted_at           timestamptz
);

CREATE TABLE interfaces (
    id          bigserial PRIMARY KEY,
    vm_id       bigint  NOT NULL REFERENCES vms (id) ON DELETE CASCADE,
    ipv4        text    NOT NULL,
    ipv6        text    NOT NULL DEFAULT '',
    public_ipv4 text    NOT NULL DEFAULT '',
    is_primary  boolean NOT NULL DEFAULT true
);
CREATE INDEX interfaces_vm ON interfaces (vm_id);

INSERT INTO subnets (id, zone_id, cidr_ipv4) VALUES (1, 1, '10.0.1.0/24'), (2, 1, '10.0.2.0/24');
