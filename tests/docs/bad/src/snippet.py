# A planted source with one region.
def main():
    # doc:begin hello
    x = 1 + 1
    print("hello", x)
    # doc:end hello
    # doc:begin twice
    # doc:end twice
    # doc:begin twice
    # doc:end twice


main()
