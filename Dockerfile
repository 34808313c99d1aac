# The doctor's container image: the static binary alone. `make image` builds it with no
# registry (scratch is not pulled). Run it on a folder with the Docker socket mounted, so that
# it can probe: see the README's "Container image".
FROM scratch
COPY shmdoctor /usr/local/bin/shmdoctor
WORKDIR /src
ENTRYPOINT ["/usr/local/bin/shmdoctor"]
