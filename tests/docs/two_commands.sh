scripts/demo   # installs what is missing, builds in build/, runs the 4-rank heat inversion
scripts/test   # installs what is missing, builds, runs every test
